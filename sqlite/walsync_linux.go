package sqlite

import (
	"os"
	"runtime"
	"syscall"
	"time"
)

// newWALSyncer returns the WAL's syncer: fdatasync(2), as SQLite itself
// syncs on Linux (the data and the size, not the times), raw while there
// are two Ps or more on two cores or more: with one P a raw sync would
// stall the node, and with one core (where `parley serve` runs two Ps,
// cmd/parley/procs.go) the thread that keeps its P through a raw sync
// shares the core with the one that runs the fan-out.
func newWALSyncer(f *os.File) *walSyncer {
	return &walSyncer{
		f:     f,
		raw:   func(f *os.File) error { return fdatasync(f, true) },
		sched: func(f *os.File) error { return fdatasync(f, false) },
		rawOK: func() bool { return runtime.GOMAXPROCS(0) >= 2 && runtime.NumCPU() >= 2 },
		now:   time.Now,
	}
}

// fdatasync syncs f's data, as a raw system call if raw.
func fdatasync(f *os.File, raw bool) error {
	fd := f.Fd()
	for {
		var e syscall.Errno
		if raw {
			_, _, e = syscall.RawSyscall(syscall.SYS_FDATASYNC, fd, 0, 0)
		} else {
			_, _, e = syscall.Syscall(syscall.SYS_FDATASYNC, fd, 0, 0)
		}
		switch e {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		}
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: e}
	}
}
