//go:build !cgo || !sqlite_fts5 || parley_modernc

package sqlite

import (
	"database/sql"
	"database/sql/driver"
	"errors"

	msqlite "modernc.org/sqlite"
)

// driverName names the SQLite driver this build uses (see DRIVER.md). The
// pure Go driver is built when cgo is off (CGO_ENABLED=0: no C toolchain, a
// static binary), with -tags parley_modernc, or without -tags sqlite_fts5
// (the cgo driver has no FTS5 without it, and the full-text index needs it).
const driverName = "modernc.org/sqlite"

// dsnParams: BEGIN IMMEDIATE.
const dsnParams = "_txlock=immediate"

func newDriver() driver.Driver {
	db, _ := sql.Open("sqlite", "") // opens no connection
	defer db.Close()
	return db.Driver()
}

// isConstraint reports whether err is SQLite's SQLITE_CONSTRAINT.
func isConstraint(err error) bool {
	var e *msqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == 19 // SQLITE_CONSTRAINT
}

// isBusy reports whether err is SQLite's SQLITE_BUSY.
func isBusy(err error) bool {
	var e *msqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == 5 // SQLITE_BUSY
}

// isFull reports whether err is SQLite's SQLITE_FULL (see driver_mattn.go).
func isFull(err error) bool {
	var e *msqlite.Error
	return errors.As(err, &e) && e.Code()&0xff == 13 // SQLITE_FULL
}
