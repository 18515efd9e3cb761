//go:build cgo && sqlite_fts5 && !parley_modernc

package sqlite

import (
	"database/sql/driver"
	"errors"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// driverName names the SQLite driver this build uses (see DRIVER.md): the
// cgo driver, whenever cgo is on and the build has the tag sqlite_fts5,
// which compiles FTS5 into it (the full-text index needs it).
const driverName = "mattn/go-sqlite3"

// dsnParams: BEGIN IMMEDIATE, and no SQLite mutex on a connection, which
// database/sql never shares between goroutines.
const dsnParams = "_txlock=immediate&_mutex=no"

func newDriver() driver.Driver { return &sqlite3.SQLiteDriver{} }

// isConstraint reports whether err is SQLite's SQLITE_CONSTRAINT: a
// statement broke a UNIQUE, CHECK or FOREIGN KEY constraint and was undone
// by SQLite, leaving the transaction usable.
func isConstraint(err error) bool {
	var e sqlite3.Error
	return errors.As(err, &e) && e.Code == sqlite3.ErrConstraint
}

// isBusy reports whether err is SQLite's SQLITE_BUSY ("database is
// locked"): another connection holds a lock this one needed.
func isBusy(err error) bool {
	var e sqlite3.Error
	return errors.As(err, &e) && e.Code == sqlite3.ErrBusy
}

// isFull reports whether err is SQLite's SQLITE_FULL: a write found the
// disk full (ENOSPC, or a short write) or the database at its
// max_page_count. SQLite undid the statement, and at a COMMIT the whole
// transaction.
func isFull(err error) bool {
	var e sqlite3.Error
	return errors.As(err, &e) && e.Code == sqlite3.ErrFull
}
