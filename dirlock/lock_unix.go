//go:build unix

package dirlock

import (
	"errors"
	"os"
	"syscall"
)

// openLocked opens or creates the file at path and takes an exclusive
// flock on it without waiting. A flock belongs to the open file, so a
// second open in the same process is refused too, and the kernel drops
// it when the process ends, however it ends.
func openLocked(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err != syscall.EINTR {
			break
		}
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// isHeld reports whether openLocked failed because another holds the lock.
func isHeld(err error) bool {
	return errors.Is(err, syscall.EWOULDBLOCK)
}
