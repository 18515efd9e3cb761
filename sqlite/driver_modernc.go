//go:build parley_modernc

package sqlite

import (
	"database/sql"
	"database/sql/driver"
	"errors"

	msqlite "modernc.org/sqlite"
)

// driverName names the SQLite driver this build uses (see DRIVER.md). This
// file is only built with -tags parley_modernc, to measure the pure Go
// driver against the cgo one.
const driverName = "modernc.org/sqlite"

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
