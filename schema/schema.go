// Package schema reads a store's embedded SQL migrations: one file per
// version, named NNNN_name.sql, in version order. Each store applies them
// with its own driver and locking; this package only names and orders them.
package schema

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one schema version. A migration, once released, is never
// edited: a change is a new file.
type Migration struct {
	Version int
	Name    string // the file name
	SQL     string
}

// Load returns the migrations matching pattern in fsys (for example
// "migrations/*.sql"), in version order. It fails on a file not named
// NNNN_name.sql and on two files of one version.
func Load(fsys fs.FS, pattern string) ([]Migration, error) {
	names, err := fs.Glob(fsys, pattern)
	if err != nil {
		return nil, err
	}
	var ms []Migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", base)
		}
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, Migration{Version: v, Name: base, SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	for i := 1; i < len(ms); i++ {
		if ms[i].Version == ms[i-1].Version {
			return nil, fmt.Errorf("migrations %s and %s share a version", ms[i-1].Name, ms[i].Name)
		}
	}
	return ms, nil
}

// Pending returns the migrations of ms (in version order, from Load) that
// a database at version current has not applied yet. It fails when the
// database is newer than every migration: this program is too old for it.
func Pending(ms []Migration, current int) ([]Migration, error) {
	if n := len(ms); n > 0 && current > ms[n-1].Version {
		return nil, fmt.Errorf("database schema version %d is newer than this program's %d", current, ms[n-1].Version)
	}
	for i, m := range ms {
		if m.Version > current {
			return ms[i:], nil
		}
	}
	return nil, nil
}
