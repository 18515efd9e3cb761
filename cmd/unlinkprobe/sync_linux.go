package main

import (
	"os"
	"syscall"
)

// fdatasync syncs f's data, as SQLite and the store's WAL syncer do.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
