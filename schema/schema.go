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

// Status is where a database's schema stands against a program's
// migrations.
type Status struct {
	Version int      // the newest version the database has applied; 0 for none
	Latest  int      // the newest version this program has
	Applied []string // the migrations this call applied, by file name
	Pending []string // the migrations the database has not applied yet
}

// NewStatus returns the status of a database at version current against
// ms (in version order, from Load): its pending migrations are the ones
// Pending returns.
func NewStatus(ms []Migration, current int) (Status, error) {
	st := Status{Version: current}
	if n := len(ms); n > 0 {
		st.Latest = ms[n-1].Version
	}
	pending, err := Pending(ms, current)
	for _, m := range pending {
		st.Pending = append(st.Pending, m.Name)
	}
	return st, err
}

// Done records that m, the first of st.Pending, is in the database now:
// applied by this call, or (applied false) by another process meanwhile.
func (st *Status) Done(m Migration, applied bool) {
	st.Version = m.Version
	if applied {
		st.Applied = append(st.Applied, m.Name)
	}
	st.Pending = st.Pending[1:]
}

// String reports st in one line, as parley migrate prints it: the
// version (of the newest, while some are pending), what this call applied
// and what is still pending, by file name. A dry run's line is the plan; a
// migration that failed half-way leaves both lists.
func (st Status) String() string {
	if len(st.Applied)+len(st.Pending) == 0 {
		return fmt.Sprintf("schema at version %d: up to date", st.Version)
	}
	s := fmt.Sprintf("schema at version %d", st.Version)
	if len(st.Pending) > 0 {
		s += fmt.Sprintf(" of %d", st.Latest)
	}
	if len(st.Applied) > 0 {
		s += "; applied: " + strings.Join(st.Applied, ", ")
	}
	if len(st.Pending) > 0 {
		s += "; pending: " + strings.Join(st.Pending, ", ")
	}
	return s
}
