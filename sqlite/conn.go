package sqlite

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"time"
)

// connector opens SQLite connections and runs the per-connection PRAGMAs
// on each, whichever driver is built in.
type connector struct {
	drv     driver.Driver
	dsn     string
	pragmas []string
}

// Connect implements driver.Connector.
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	ex, ok := conn.(driver.ExecerContext)
	if !ok {
		conn.Close()
		return nil, fmt.Errorf("driver %s cannot exec", driverName)
	}
	for _, p := range c.pragmas {
		if _, err := ex.ExecContext(ctx, p, nil); err != nil {
			conn.Close()
			return nil, fmt.Errorf("%s: %w", p, err)
		}
	}
	return conn, nil
}

// Driver implements driver.Connector.
func (c *connector) Driver() driver.Driver { return c.drv }

// openDB opens a pool of at most n connections to path. write selects the
// settings of the writer (and the checkpointer); readers are query-only.
func openDB(path string, n int, write bool, cfg Config) *sql.DB {
	pragmas := []string{
		fmt.Sprintf("PRAGMA busy_timeout = %d", cfg.BusyTimeout/time.Millisecond),
		"PRAGMA foreign_keys = ON",
		"PRAGMA synchronous = " + cfg.Sync.pragma(write),
		"PRAGMA temp_store = MEMORY",
		fmt.Sprintf("PRAGMA cache_size = -%d", cfg.CacheKiB),
	}
	if write {
		// After a checkpoint resets the WAL, cut it back to walKeep
		// (the checkpointer moves this limit: checkpoint.go).
		// secure_delete (a setting of the connection, not of the file):
		// what a write deletes or replaces, the old text of a message
		// too, is overwritten with zeros in its page, and a page it
		// frees is zeroed, so the page images it writes hold no deleted
		// bytes (checkpoint.go erases the WAL's older ones).
		pragmas = append(pragmas, journalSizeLimit(walKeep),
			fmt.Sprintf("PRAGMA wal_autocheckpoint = %d", writerAutoCheckpoint),
			"PRAGMA secure_delete = ON")
	} else {
		pragmas = append(pragmas, "PRAGMA query_only = ON")
	}
	// BEGIN IMMEDIATE (dsnParams): the writer takes the write lock when it
	// starts a batch, never half-way through it.
	db := sql.OpenDB(&connector{drv: newDriver(), dsn: path + "?" + dsnParams, pragmas: pragmas})
	db.SetMaxOpenConns(n)
	db.SetMaxIdleConns(n)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db
}

// journalSizeLimit is the PRAGMA that sets the size the writer cuts the WAL
// back to when it restarts it, in bytes (the checkpointer moves it:
// checkpoint.go).
func journalSizeLimit(n int64) string {
	return fmt.Sprintf("PRAGMA journal_size_limit = %d", n)
}
