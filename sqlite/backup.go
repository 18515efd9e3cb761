package sqlite

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"parley/schema"
)

// Backups. Backup copies a database, live or not, into one file from one
// read transaction on a read-only connection, so the copy is a consistent
// snapshot of the last commit before it began, and the writer goes on
// committing meanwhile (a reader never blocks it in WAL mode; the
// checkpointer cannot restart the WAL until the copy ends, so the WAL
// grows for that long). By default it copies pages with SQLite's online
// backup API, paced so that a server beside it keeps its core and disk
// (backupcopy.go); or with VACUUM INTO, at full speed. Restore puts a
// snapshot back, into a data directory no process has open: it checks the
// file first (Inspect), copies it beside the database (VACUUM INTO), then
// replaces the database in one rename.

// Errors of Inspect and Restore, wrapped with the file they are about.
var (
	// ErrNotDatabase: the file is not a SQLite database.
	ErrNotDatabase = errors.New("not a SQLite database")
	// ErrNotParley: a SQLite database, but not one of Parley's.
	ErrNotParley = errors.New("not a Parley database")
	// ErrNewerSchema: a Parley database of a schema newer than this
	// program's.
	ErrNewerSchema = errors.New("schema newer than this program's")
	// ErrCorrupt: PRAGMA integrity_check found the database damaged.
	ErrCorrupt = errors.New("database damaged")
	// ErrForeignSchema: a Parley database whose schema is not the one
	// Parley's migrations make at its version: it has a table, index,
	// trigger or view they do not make, lacks one they make, or has one
	// changed.
	ErrForeignSchema = errors.New("schema differs from Parley's")
)

// BackupInfo says what a snapshot holds.
type BackupInfo struct {
	Version  int   // the snapshot's schema version
	Latest   int   // this program's newest schema version
	Users    int64 // rows of users
	Rooms    int64 // rows of rooms
	Messages int64 // rows of messages, deleted ones included
	Bytes    int64 // the file's size
	Took     time.Duration
}

// String reports bi in one line, as parley backup and restore print it.
func (bi BackupInfo) String() string {
	s := fmt.Sprintf("schema version %d, %d users, %d rooms, %d messages, %d bytes", bi.Version, bi.Users, bi.Rooms, bi.Messages, bi.Bytes)
	if bi.Took > 0 {
		s += fmt.Sprintf(" in %v", bi.Took.Round(time.Millisecond))
	}
	return s
}

// Backup writes a consistent snapshot of the database at dbPath, which a
// running Store may have open, to dest, which must not exist: into a
// temporary file beside dest, fsynced, then renamed to dest and the
// directory fsynced, so that dest is either absent or whole. It takes no
// lock, and writes nothing beside dbPath but the -wal and -shm files SQLite
// keeps for a WAL database (empty ones, when no Store has it open). The
// snapshot is one file in rollback-journal mode, with no -wal beside it.
// cfg says how it copies: paced by default (copyPaced), or with VACUUM
// INTO.
func Backup(ctx context.Context, dbPath, dest string, cfg BackupConfig) (BackupInfo, error) {
	start := time.Now()
	if _, err := os.Lstat(dest); err == nil {
		return BackupInfo{}, fmt.Errorf("backup to %s: %w", dest, fs.ErrExist)
	}
	if _, err := os.Stat(dbPath); err != nil {
		return BackupInfo{}, fmt.Errorf("backup %s: %w", dbPath, err)
	}
	if err := checkHeader(dbPath); err != nil {
		return BackupInfo{}, fmt.Errorf("backup %s: %w", dbPath, err)
	}
	tmp, err := snapshot(ctx, dbPath, dest, cfg)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("backup %s: %w", dbPath, err)
	}
	defer os.Remove(tmp) // after the link below, or after a failure
	bi, err := inspect(ctx, tmp, 0)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("backup %s: %w", dbPath, err)
	}
	// A hard link, unlike a rename, never replaces a dest created since
	// the check above.
	if err := os.Link(tmp, dest); err != nil {
		return BackupInfo{}, fmt.Errorf("backup to %s: %w", dest, err)
	}
	if err := fsync(filepath.Dir(dest)); err != nil {
		return BackupInfo{}, fmt.Errorf("backup to %s: %w", dest, err)
	}
	bi.Took = time.Since(start)
	return bi, nil
}

// Inspect checks that the file at path is a whole Parley database whose
// schema this program can open (it may be older: Open and Migrate upgrade
// it) and reports what it holds. It opens the file read-only and runs
// PRAGMA integrity_check, which reads every page, then compares the
// schema with the one Parley's migrations make at the file's version
// (checkSchema). It fails with ErrNotDatabase, ErrCorrupt, ErrNotParley,
// ErrNewerSchema or ErrForeignSchema, wrapped.
func Inspect(ctx context.Context, path string) (BackupInfo, error) {
	if err := checkHeader(path); err != nil {
		return BackupInfo{}, fmt.Errorf("%s: %w", path, err)
	}
	bi, err := inspect(ctx, path, wantIntegrity|wantSchema)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("%s: %w", path, err)
	}
	return bi, nil
}

// Restore replaces the database at dbPath with a copy of the snapshot at
// src, after Inspect has accepted src. No process may have dbPath open:
// the caller holds its data directory's lock (package dirlock). The copy
// is written beside dbPath and fsynced; then the old database's -wal and
// -shm files are removed (a WAL left beside the new file would be replayed
// into it) and the copy renamed over dbPath, each step made durable by an
// fsync of the directory. A failure before the removal leaves dbPath as
// it was.
func Restore(ctx context.Context, src, dbPath string) (BackupInfo, error) {
	start := time.Now()
	bi, err := Inspect(ctx, src)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("restore %w", err)
	}
	tmp, err := snapshot(ctx, src, dbPath, BackupConfig{Vacuum: true})
	if err != nil {
		return BackupInfo{}, fmt.Errorf("restore %s: %w", src, err)
	}
	defer os.Remove(tmp) // after a failure; gone by the rename otherwise
	// The copy's schema, again: it is what serve will run, whatever
	// became of src since Inspect read it.
	got, err := inspect(ctx, tmp, wantSchema)
	if err != nil {
		return BackupInfo{}, fmt.Errorf("restore %s: copy: %w", src, err)
	}
	if got.Version != bi.Version || got.Users != bi.Users || got.Rooms != bi.Rooms || got.Messages != bi.Messages {
		return BackupInfo{}, fmt.Errorf("restore %s: the copy holds %v, the file %v", src, got, bi)
	}
	dir := filepath.Dir(dbPath)
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if err := os.Remove(dbPath + suffix); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return BackupInfo{}, fmt.Errorf("restore %s: %w", src, err)
		}
	}
	if err := fsync(dir); err != nil {
		return BackupInfo{}, fmt.Errorf("restore %s: %w", src, err)
	}
	if err := os.Rename(tmp, dbPath); err != nil {
		return BackupInfo{}, fmt.Errorf("restore %s: %w", src, err)
	}
	if err := fsync(dir); err != nil {
		return BackupInfo{}, fmt.Errorf("restore %s: %w", src, err)
	}
	got.Took = time.Since(start)
	return got, nil
}

// snapshot copies the database at src, as cfg says (copyPaced, or VACUUM
// INTO), into a new temporary file beside dest, in rollback-journal mode
// and fsynced, and returns its path. It removes the file when it fails.
func snapshot(ctx context.Context, src, dest string, cfg BackupConfig) (tmp string, err error) {
	f, err := os.CreateTemp(filepath.Dir(dest), "."+filepath.Base(dest)+".*.tmp")
	if err != nil {
		return "", err
	}
	tmp = f.Name()
	f.Close() // VACUUM INTO writes into an empty file
	defer func() {
		if err != nil {
			os.Remove(tmp)
		}
	}()
	if cfg.Vacuum {
		db := openReadOnly(src)
		_, err = db.ExecContext(ctx, "VACUUM INTO ?", tmp)
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return "", fmt.Errorf("vacuum into %s: %w", tmp, err)
		}
	} else if err := copyPaced(ctx, src, tmp, cfg); err != nil {
		return "", fmt.Errorf("copy into %s: %w", tmp, err)
	}
	// The copy of a WAL database says WAL in its header; make it one
	// self-contained file (Open puts it back in WAL mode).
	db := sql.OpenDB(&connector{drv: newDriver(), dsn: tmp, pragmas: []string{"PRAGMA busy_timeout = 5000"}})
	var mode string
	err = db.QueryRowContext(ctx, "PRAGMA journal_mode = DELETE").Scan(&mode)
	if cerr := db.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("copy %s: journal mode: %w", tmp, err)
	}
	if err := fsync(tmp); err != nil {
		return "", err
	}
	return tmp, nil
}

// openReadOnly opens one read-only connection to the database at path:
// it never creates the file, and cannot write to it.
func openReadOnly(path string) *sql.DB {
	abs, err := filepath.Abs(path)
	if err != nil {
		abs = path
	}
	u := url.URL{Scheme: "file", Path: abs, RawQuery: "mode=ro"}
	db := sql.OpenDB(&connector{drv: newDriver(), dsn: u.String(), pragmas: []string{"PRAGMA busy_timeout = 5000"}})
	db.SetMaxOpenConns(1)
	return db
}

// sqliteHeader is the first 16 bytes of every SQLite 3 database file.
var sqliteHeader = []byte("SQLite format 3\x00")

// checkHeader fails with ErrNotDatabase unless the file at path starts as
// a SQLite database does.
func checkHeader(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	head := make([]byte, len(sqliteHeader))
	if _, err := io.ReadFull(f, head); err != nil || !bytes.Equal(head, sqliteHeader) {
		return ErrNotDatabase
	}
	return nil
}

// checks are what inspect checks besides the version.
type checks uint8

const (
	wantIntegrity checks = 1 << iota // PRAGMA integrity_check, reading every page
	wantSchema                       // the schema is Parley's (checkSchema)
)

// inspect reads what the database at path holds, read-only, after the
// checks asked for.
func inspect(ctx context.Context, path string, check checks) (BackupInfo, error) {
	st, err := os.Stat(path)
	if err != nil {
		return BackupInfo{}, err
	}
	bi := BackupInfo{Bytes: st.Size()}
	db := openReadOnly(path)
	defer db.Close()
	if check&wantIntegrity != 0 {
		if err := integrityCheck(ctx, db); err != nil {
			return bi, err
		}
	}
	if bi.Version, bi.Latest, err = parleyVersion(ctx, db); err != nil {
		return bi, err
	}
	if check&wantSchema != 0 {
		if err := checkSchema(ctx, db, bi.Version); err != nil {
			return bi, err
		}
	}
	for _, c := range []struct {
		table string
		n     *int64
	}{{"users", &bi.Users}, {"rooms", &bi.Rooms}, {"messages", &bi.Messages}} {
		if err := db.QueryRowContext(ctx, "SELECT count(*) FROM "+c.table).Scan(c.n); err != nil {
			return bi, fmt.Errorf("count %s: %w: %v", c.table, ErrNotParley, err)
		}
	}
	return bi, nil
}

// integrityCheck runs PRAGMA integrity_check, which answers one row "ok"
// or up to 100 rows saying what is wrong, or fails outright on damage it
// cannot read past: either is ErrCorrupt.
func integrityCheck(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("%w: integrity check: %w", ErrCorrupt, err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return fmt.Errorf("%w: integrity check: %w", ErrCorrupt, err)
		}
		if s != "ok" && len(problems) < 3 {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%w: integrity check: %w", ErrCorrupt, err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: integrity check: %q", ErrCorrupt, problems)
	}
	return nil
}

// parleyVersion returns the schema version of db and this program's
// newest. A Parley database has a schema_migrations table whose rows name
// this program's migration files, version by version.
func parleyVersion(ctx context.Context, db *sql.DB) (version, latest int, err error) {
	ms, err := schema.Load(migrations, "migrations/*.sql")
	if err != nil {
		return 0, 0, err
	}
	latest = ms[len(ms)-1].Version
	rows, err := db.QueryContext(ctx, "SELECT version, name FROM schema_migrations ORDER BY version")
	if err != nil {
		return 0, latest, fmt.Errorf("%w (no schema_migrations table: %v)", ErrNotParley, err)
	}
	defer rows.Close()
	names := map[int]string{}
	for _, m := range ms {
		names[m.Version] = m.Name
	}
	for rows.Next() {
		var v int
		var name string
		if err := rows.Scan(&v, &name); err != nil {
			return 0, latest, fmt.Errorf("%w (schema_migrations: %v)", ErrNotParley, err)
		}
		if want, ok := names[v]; v <= latest && (!ok || name != want) {
			return 0, latest, fmt.Errorf("%w (its migration %d is %q, this program's %q)", ErrNotParley, v, name, want)
		}
		version = v
	}
	if err := rows.Err(); err != nil {
		return 0, latest, fmt.Errorf("schema_migrations: %w", err)
	}
	if version == 0 {
		return 0, latest, fmt.Errorf("%w (no migration applied)", ErrNotParley)
	}
	if version > latest {
		return version, latest, fmt.Errorf("%w: version %d, this program's %d: use a newer parley", ErrNewerSchema, version, latest)
	}
	return version, latest, nil
}

// schemaKey names an object of a schema: a table, index, trigger or view.
type schemaKey struct{ typ, name string }

// schemaObject is the rest of an object's row of sqlite_master.
type schemaObject struct {
	table string         // tbl_name: the table an index or trigger is on
	sql   sql.NullString // the CREATE statement as SQLite keeps it
}

// checkSchema fails with ErrForeignSchema, naming the first objects that
// differ, unless the schema of db, a Parley database of schema version,
// is the one Parley's migrations make at that version: the same tables,
// indexes, triggers and views, the full-text index's shadow tables among
// them, each on the same table and with the same SQL but for layout
// (normalSQL). SQLite keeps a statement's text as it was written, and an
// ALTER TABLE edits it, so the migrations applied in order give the same
// text every time. Objects of anyone else's would run
// in parley serve: a trigger could copy each deleted message's text, or
// each new password hash, into a table of its own. Only SQLite's
// statistics tables (sqlite_stat1 to 4, which ANALYZE makes) are left out.
func checkSchema(ctx context.Context, db *sql.DB, version int) error {
	want, err := parleySchema(ctx, version)
	if err != nil {
		return fmt.Errorf("schema of version %d: %w", version, err)
	}
	got, err := readSchema(ctx, db)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrForeignSchema, err)
	}
	keys := make([]schemaKey, 0, len(got)+len(want))
	for k := range got {
		keys = append(keys, k)
	}
	for k := range want {
		if _, ok := got[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b schemaKey) int {
		return cmp.Or(cmp.Compare(a.typ, b.typ), cmp.Compare(a.name, b.name))
	})
	var problems []string
	for _, k := range keys {
		g, inGot := got[k]
		w, inWant := want[k]
		switch {
		case !inWant:
			problems = append(problems, fmt.Sprintf("%s %s not Parley's", k.typ, k.name))
		case !inGot:
			problems = append(problems, fmt.Sprintf("%s %s missing", k.typ, k.name))
		case g.table != w.table || g.sql.Valid != w.sql.Valid || normalSQL(g.sql.String) != normalSQL(w.sql.String):
			problems = append(problems, fmt.Sprintf("%s %s changed", k.typ, k.name))
		}
	}
	if len(problems) == 0 {
		return nil
	}
	if len(problems) > 3 {
		problems = append(problems[:3], fmt.Sprintf("%d more", len(problems)-3))
	}
	return fmt.Errorf("%w: %s", ErrForeignSchema, strings.Join(problems, ", "))
}

// normalSQL returns the statement q with its comments removed, each run
// of whitespace made one space, and none left after "(" or before ")" and
// ",": what is inside quotes ('…', "…", `…`, […]) is kept as it is. Two
// statements that differ only in layout, as the same CREATE TABLE written
// on one line or on several, are then equal.
func normalSQL(q string) string {
	var b strings.Builder
	space := false // whitespace or a comment seen since the last byte written
	for i := 0; i < len(q); i++ {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			space = true
			continue
		case c == '-' && strings.HasPrefix(q[i:], "--"):
			if j := strings.IndexByte(q[i:], '\n'); j >= 0 {
				i += j
			} else {
				i = len(q)
			}
			space = true
			continue
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			if j := strings.Index(q[i+2:], "*/"); j >= 0 {
				i += j + 3
			} else {
				i = len(q)
			}
			space = true
			continue
		}
		if space && b.Len() > 0 && !strings.HasSuffix(b.String(), "(") && c != ')' && c != ',' {
			b.WriteByte(' ')
		}
		space = false
		end := byte(0)
		switch c {
		case '\'', '"', '`':
			end = c
		case '[':
			end = ']'
		}
		if end == 0 {
			b.WriteByte(c)
			continue
		}
		// A quoted string or name, to its closing quote (a doubled quote
		// inside is two quoted runs in a row, kept alike).
		j := strings.IndexByte(q[i+1:], end)
		if j < 0 {
			b.WriteString(q[i:])
			break
		}
		b.WriteString(q[i : i+j+2])
		i += j + 1
	}
	return b.String()
}

// parleySchema returns the schema Parley's migrations make at version,
// from a new database in memory that they are applied to.
func parleySchema(ctx context.Context, version int) (map[schemaKey]schemaObject, error) {
	// One connection, never closed before db: each connection to
	// :memory: is a database of its own. Foreign keys on, as the store
	// migrates.
	db := sql.OpenDB(&connector{drv: newDriver(), dsn: ":memory:", pragmas: []string{"PRAGMA foreign_keys = ON"}})
	defer db.Close()
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	if err := migrateTo(ctx, db, version); err != nil {
		return nil, err
	}
	return readSchema(ctx, db)
}

// readSchema reads the objects of db's sqlite_master but SQLite's
// statistics tables. It fails if one is there twice, which only a write
// to sqlite_master itself can do.
func readSchema(ctx context.Context, db *sql.DB) (map[schemaKey]schemaObject, error) {
	rows, err := db.QueryContext(ctx, `SELECT type, name, tbl_name, sql FROM sqlite_master
		WHERE NOT (type = 'table' AND name GLOB 'sqlite_stat[1234]')`)
	if err != nil {
		return nil, fmt.Errorf("read sqlite_master: %w", err)
	}
	defer rows.Close()
	objs := map[schemaKey]schemaObject{}
	for rows.Next() {
		var k schemaKey
		var o schemaObject
		if err := rows.Scan(&k.typ, &k.name, &o.table, &o.sql); err != nil {
			return nil, fmt.Errorf("read sqlite_master: %w", err)
		}
		if _, ok := objs[k]; ok {
			return nil, fmt.Errorf("%s %s twice in sqlite_master", k.typ, k.name)
		}
		objs[k] = o
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read sqlite_master: %w", err)
	}
	return objs, nil
}

// fsync fsyncs the file or directory at path: a directory's fsync makes
// the names created, renamed or removed in it durable.
func fsync(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
