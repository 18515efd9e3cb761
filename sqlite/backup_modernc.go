//go:build !cgo || !sqlite_fts5 || parley_modernc

package sqlite

import (
	"fmt"
	"net/url"
	"strings"

	msqlite "modernc.org/sqlite"
)

// moderncBackup is SQLite's online backup API through the pure Go driver.
type moderncBackup struct{ b *msqlite.Backup }

// newPageBackup starts an online backup of the database of the driver
// connection src (from (*sql.Conn).Raw) into a new database at dest, which
// it opens without a journal and without syncs (copyPaced syncs it).
func newPageBackup(src any, dest string) (pageBackup, error) {
	sc, ok := src.(interface {
		NewBackup(dstURI string) (*msqlite.Backup, error)
	})
	if !ok {
		return nil, fmt.Errorf("online backup: a %T is not the pure Go driver's connection", src)
	}
	// The driver opens the destination itself, running each _pragma.
	q := url.Values{}
	for _, p := range backupDestPragmas {
		// "PRAGMA name = value" → "name(value)"
		name, value, _ := strings.Cut(strings.TrimPrefix(p, "PRAGMA "), " = ")
		q.Add("_pragma", name+"("+value+")")
	}
	u := url.URL{Scheme: "file", Path: dest, RawQuery: q.Encode()}
	b, err := sc.NewBackup(u.String())
	if err != nil {
		return nil, err
	}
	return &moderncBackup{b: b}, nil
}

// step copies up to n pages; SQLITE_BUSY and SQLITE_LOCKED are errors of
// this driver's, but the source is pinned by a read transaction and the
// destination is this backup's alone, so neither is expected.
func (m *moderncBackup) step(n int) (bool, error) {
	more, err := m.b.Step(int32(n))
	return !more && err == nil, err
}

func (m *moderncBackup) remaining() int { return m.b.Remaining() }
func (m *moderncBackup) pageCount() int { return m.b.PageCount() }
func (m *moderncBackup) finish() error  { return m.b.Finish() }
