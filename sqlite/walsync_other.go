//go:build !linux

package sqlite

import "os"

// walSync makes the WAL's data durable.
func walSync(f *os.File) error { return f.Sync() }
