//go:build cgo && sqlite_fts5 && !parley_modernc

package sqlite

import (
	"fmt"

	sqlite3 "github.com/mattn/go-sqlite3"
)

// mattnBackup is SQLite's online backup API through the cgo driver.
type mattnBackup struct {
	dst *sqlite3.SQLiteConn
	b   *sqlite3.SQLiteBackup
}

// newPageBackup starts an online backup of the database of the driver
// connection src (from (*sql.Conn).Raw) into a new database at dest, which
// it opens without a journal and without syncs (copyPaced syncs it).
func newPageBackup(src any, dest string) (pageBackup, error) {
	sc, ok := src.(*sqlite3.SQLiteConn)
	if !ok {
		return nil, fmt.Errorf("online backup: a %T is not the cgo driver's connection", src)
	}
	c, err := (&sqlite3.SQLiteDriver{}).Open(dest)
	if err != nil {
		return nil, err
	}
	dst := c.(*sqlite3.SQLiteConn)
	for _, q := range backupDestPragmas {
		if _, err := dst.Exec(q, nil); err != nil {
			dst.Close()
			return nil, fmt.Errorf("%s: %w", q, err)
		}
	}
	b, err := dst.Backup("main", sc, "main")
	if err != nil {
		dst.Close()
		return nil, err
	}
	return &mattnBackup{dst: dst, b: b}, nil
}

// step copies up to n pages; the driver reports SQLITE_BUSY and
// SQLITE_LOCKED as neither done nor failed, and the next step retries.
func (m *mattnBackup) step(n int) (bool, error) { return m.b.Step(n) }

func (m *mattnBackup) remaining() int { return m.b.Remaining() }
func (m *mattnBackup) pageCount() int { return m.b.PageCount() }

func (m *mattnBackup) finish() error {
	err := m.b.Finish()
	if cerr := m.dst.Close(); err == nil {
		err = cerr
	}
	return err
}
