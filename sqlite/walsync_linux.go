package sqlite

import (
	"os"
	"runtime"
	"syscall"
)

// walSync makes the WAL's data durable with fdatasync(2), as SQLite itself
// syncs on Linux (the data and the size, not the times).
//
// With two or more Ps it is issued as a raw system call: the flusher's
// goroutine keeps its P while the disk works, instead of handing it over
// and then queueing for one again behind every runnable goroutine of a busy
// node. That queueing was most of a commit's fsync stage under load (p50
// 0.8-1.6 ms against 0.4 raw; BENCHMARKS.md, "The WAL's fsync as a raw
// system call"). The cost: one P is busy for the length of each fsync, and
// a stop-the-world pause of the garbage collector waits for it to return.
// With one P that would stall the whole node for every fsync, so it then
// goes through the scheduler like any system call.
func walSync(f *os.File) error {
	if runtime.GOMAXPROCS(0) < 2 {
		return f.Sync()
	}
	fd := f.Fd()
	for {
		_, _, e := syscall.RawSyscall(syscall.SYS_FDATASYNC, fd, 0, 0)
		switch e {
		case 0:
			return nil
		case syscall.EINTR:
			continue
		}
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: e}
	}
}
