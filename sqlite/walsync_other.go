//go:build !linux

package sqlite

import (
	"os"
	"time"
)

// newWALSyncer returns the WAL's syncer: File.Sync, through the scheduler.
func newWALSyncer(f *os.File) *walSyncer {
	return &walSyncer{f: f, sched: (*os.File).Sync, rawOK: func() bool { return false }, now: time.Now}
}
