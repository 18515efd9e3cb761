//go:build !unix && !windows

package dirlock

import (
	"errors"
	"os"
)

// openLocked fails: this system has no lock Acquire knows how to take.
func openLocked(path string) (*os.File, error) {
	return nil, errors.ErrUnsupported
}

func isHeld(err error) bool { return false }
