package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
	"parley/schema"
)

// mustOpenStore opens a store at path, closed at cleanup.
func mustOpenStore(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), Config{Path: path, Sync: SyncNormal})
	if err != nil {
		t.Fatalf("Open(%s) error = %v", path, err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// execFile runs statements on the database at path, creating it if needed.
func execFile(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db := sql.OpenDB(&connector{drv: newDriver(), dsn: path})
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// entries lists the names in dir.
func entries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, de := range des {
		names = append(names, de.Name())
	}
	return names
}

// TestBackupWhileWriting: a backup taken while writers commit into four
// rooms is a snapshot of one moment: in the copy every room's messages
// are seq 1..N with no hole, N is the room's last_seq, and each is the
// message the live store has at that seq. The paced copy is made to
// interleave with the writers: after each of its first steps it waits
// for more commits; it must neither take them in (the snapshot) nor start
// over (its pages left to copy only go down), and it must finish.
func TestBackupWhileWriting(t *testing.T) {
	t.Run("paced", func(t *testing.T) { testBackupWhileWriting(t, false) })
	t.Run("vacuum", func(t *testing.T) { testBackupWhileWriting(t, true) })
}

func testBackupWhileWriting(t *testing.T, vacuum bool) {
	ctx := context.Background()
	dir := t.TempDir()
	s := mustOpenStore(t, filepath.Join(dir, "parley.db"))
	u := parleytest.MustCreateUser(t, s, "writer")
	var rooms []parley.Room
	for i := range 4 {
		rooms = append(rooms, parleytest.MustCreateRoom(t, s, u, fmt.Sprintf("room %d", i), 0))
	}

	var sent atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				r := rooms[(w+i)%len(rooms)]
				if _, _, err := s.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name,
					Body: fmt.Sprintf("writer %d message %d", w, i)}); err != nil {
					t.Errorf("Send: %v", err)
					return
				}
				sent.Add(1)
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	parleytest.Eventually(t, 30*time.Second, func() bool { return sent.Load() >= 2000 }, "writers stuck at %d messages", sent.Load())

	dest := filepath.Join(t.TempDir(), "backup.db")
	cfg := BackupConfig{Vacuum: vacuum}
	var steps, interleaved int
	if !vacuum {
		last := -1
		cfg = BackupConfig{Rate: -1, stepPages: 4, onStep: func(remaining, total int) {
			steps++
			if last >= 0 && remaining >= last {
				t.Errorf("step %d: %d of %d pages left to copy, %d after the step before: the backup started over", steps, remaining, total, last)
			}
			last = remaining
			if steps <= 20 {
				n := sent.Load()
				parleytest.Eventually(t, 30*time.Second, func() bool { return sent.Load() >= n+20 }, "writers stuck during the backup")
				interleaved++
			}
		}}
	}
	before := sent.Load()
	bi, err := Backup(ctx, filepath.Join(dir, "parley.db"), dest, cfg)
	if err != nil {
		t.Fatalf("Backup() error = %v", err)
	}
	at := sent.Load()
	if !vacuum && interleaved < 20 {
		t.Errorf("the paced backup took %d steps, want more than 20 (the writers committed between %d)", steps, interleaved)
	}
	parleytest.Eventually(t, 30*time.Second, func() bool { return sent.Load() >= at+100 }, "writers stopped after the backup")
	if bi.Messages < before || bi.Messages > at {
		t.Errorf("Backup() saved %d messages; %d were sent before it began, %d when it ended", bi.Messages, before, at)
	}
	if bi.Users != 1 || bi.Rooms != 4 || bi.Version != bi.Latest || bi.Version == 0 {
		t.Errorf("Backup() = %+v, want 1 user, 4 rooms, the latest schema", bi)
	}
	if st, err := os.Stat(dest); err != nil || st.Size() != bi.Bytes {
		t.Errorf("backup file: %v, %v; want %d bytes", st, err, bi.Bytes)
	}
	if _, err := os.Stat(dest + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("backup has a -wal beside it (%v), want one self-contained file", err)
	}
	if names := entries(t, filepath.Dir(dest)); len(names) != 1 {
		t.Errorf("backup directory holds %q, want the backup alone", names)
	}
	if got, err := Inspect(ctx, dest); err != nil || got.Messages != bi.Messages {
		t.Errorf("Inspect(backup) = %+v, %v; want %d messages", got, err, bi.Messages)
	}

	c := mustOpenStore(t, dest)
	var total int64
	for _, r := range rooms {
		last := parleytest.MustRoom(t, c, r.ID).LastSeq
		var after int64
		for {
			page, err := c.Messages(ctx, r.ID, parley.Page{After: after, Limit: 500})
			if err != nil {
				t.Fatalf("Messages(copy) error = %v", err)
			}
			if len(page) == 0 {
				break
			}
			live, err := s.Messages(ctx, r.ID, parley.Page{After: after, Limit: len(page)})
			if err != nil {
				t.Fatalf("Messages(live) error = %v", err)
			}
			for i, m := range page {
				if m.Seq != after+1 {
					t.Fatalf("room %s in the copy: seq %d follows %d", r.Title, m.Seq, after)
				}
				if i >= len(live) || live[i].ID != m.ID || live[i].Body != m.Body {
					t.Fatalf("room %s seq %d in the copy is %+v, live %+v", r.Title, m.Seq, m, live[i])
				}
				after = m.Seq
			}
		}
		if after != last {
			t.Errorf("room %s in the copy: messages up to seq %d, last_seq %d", r.Title, after, last)
		}
		total += after
	}
	if total != bi.Messages {
		t.Errorf("copy holds %d messages, Backup() said %d", total, bi.Messages)
	}
	t.Logf("backup of %d messages (%d bytes) in %v while %d more were sent", bi.Messages, bi.Bytes, bi.Took, at-before)
}

// TestBackupRefuses: an existing destination and a missing or foreign
// database are refused, and leave no file behind.
func TestBackupRefuses(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := filepath.Join(dir, "parley.db")
	mustOpenStore(t, db)
	out := t.TempDir()
	exists := filepath.Join(out, "exists.db")
	if err := os.WriteFile(exists, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(out, "notes.txt")
	if err := os.WriteFile(text, []byte("not a database at all, just some words"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, src, dest string
		want            error
	}{
		{"existing dest", db, exists, fs.ErrExist},
		{"missing database", filepath.Join(dir, "nope.db"), filepath.Join(out, "a.db"), fs.ErrNotExist},
		{"text file", text, filepath.Join(out, "b.db"), ErrNotDatabase},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Backup(ctx, tc.src, tc.dest, BackupConfig{}); !errors.Is(err, tc.want) {
				t.Errorf("Backup(%s, %s) error = %v, want %v", tc.src, tc.dest, err, tc.want)
			}
		})
	}
	if b, _ := os.ReadFile(exists); string(b) != "keep me" {
		t.Errorf("existing destination now holds %q", b)
	}
	if names := entries(t, out); len(names) != 2 {
		t.Errorf("destination directory holds %q, want exists.db and notes.txt", names)
	}
}

// TestInspect: Inspect accepts a Parley database of this or an older
// schema and refuses a text file, an empty file, a damaged database,
// another program's SQLite database, one whose migrations are not
// Parley's, and a newer schema, each with its error.
func TestInspect(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	s := mustOpenStore(t, filepath.Join(dir, "live.db"))
	u := parleytest.MustCreateUser(t, s, "ann")
	r := parleytest.MustCreateRoom(t, s, u, "kept", 0)
	for i := range 500 {
		parleytest.MustSend(t, s, r, u, fmt.Sprintf("message %d with some words to fill the pages %0200d", i, i))
	}
	if _, err := Backup(ctx, filepath.Join(dir, "live.db"), good, BackupConfig{}); err != nil {
		t.Fatal(err)
	}
	copyOf := func(name string, stmts ...string) string {
		b, err := os.ReadFile(good)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		execFile(t, p, stmts...)
		return p
	}
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	damaged := copyOf("damaged.db")
	b, _ := os.ReadFile(damaged)
	for i := 3 * 4096; i < len(b)-4096; i += 4096 { // every page's start but the first few
		copy(b[i+8:i+64], bytes.Repeat([]byte{0xa5}, 56))
	}
	os.WriteFile(damaged, b, 0o644)
	foreign := filepath.Join(dir, "foreign.db")
	execFile(t, foreign, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", "INSERT INTO notes (body) VALUES ('hello')")
	otherTool := filepath.Join(dir, "other.db")
	execFile(t, otherTool, "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, dirty INTEGER)", "INSERT INTO schema_migrations VALUES (3, 0)")

	ms := must(schema.Load(migrations, "migrations/*.sql"))
	older := mustDBAt(t, filepath.Join(dir, "older.db"), 3)
	latest := ms[len(ms)-1].Version

	for _, tc := range []struct {
		name    string
		path    string
		want    error
		version int
	}{
		{"backup", good, nil, latest},
		{"older schema", older, nil, 3},
		{"text file", write("notes.txt", []byte("SQLite is not in here, only text\n")), ErrNotDatabase, 0},
		{"empty file", write("empty.db", nil), ErrNotDatabase, 0},
		{"missing", filepath.Join(dir, "missing.db"), fs.ErrNotExist, 0},
		{"damaged", damaged, ErrCorrupt, 0},
		{"foreign database", foreign, ErrNotParley, 0},
		{"another tool's migrations", otherTool, ErrNotParley, 0},
		{"renamed migration", copyOf("renamed.db", "UPDATE schema_migrations SET name = '0002_other.sql' WHERE version = 2"), ErrNotParley, 0},
		{"newer schema", copyOf("newer.db", fmt.Sprintf("INSERT INTO schema_migrations VALUES (%d, '9999_future.sql', 0)", latest+1)), ErrNewerSchema, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bi, err := Inspect(ctx, tc.path)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Inspect(%s) error = %v, want %v", tc.name, err, tc.want)
			}
			if err == nil && (bi.Version != tc.version || bi.Latest != latest) {
				t.Errorf("Inspect(%s) = %+v, want version %d of %d", tc.name, bi, tc.version, latest)
			}
			if err == nil && tc.version == latest && (bi.Users != 1 || bi.Rooms != 1 || bi.Messages != 500) {
				t.Errorf("Inspect(%s) = %+v, want 1 user, 1 room, 500 messages", tc.name, bi)
			}
		})
	}
}

// TestRestore: Restore replaces a database and drops its stale WAL, so
// the store opened after it holds exactly the snapshot; a refused file
// leaves the database as it was.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	src := filepath.Join(t.TempDir(), "backup.db")
	{
		dir := t.TempDir()
		s := mustOpenStore(t, filepath.Join(dir, "parley.db"))
		u := parleytest.MustCreateUser(t, s, "ann")
		r := parleytest.MustCreateRoom(t, s, u, "saved", 0)
		for i := range 10 {
			parleytest.MustSend(t, s, r, u, fmt.Sprintf("saved %d", i))
		}
		if _, err := Backup(ctx, filepath.Join(dir, "parley.db"), src, BackupConfig{}); err != nil {
			t.Fatal(err)
		}
	}

	dir := t.TempDir()
	dbPath := filepath.Join(dir, "parley.db")
	s, err := Open(ctx, Config{Path: dbPath, Sync: SyncNormal})
	if err != nil {
		t.Fatal(err)
	}
	u := parleytest.MustCreateUser(t, s, "bob")
	r := parleytest.MustCreateRoom(t, s, u, "replaced", 0)
	parleytest.MustSend(t, s, r, u, "gone after the restore")
	// Keep the WAL: copy the files of the open database, as a crash leaves them.
	crashed := filepath.Join(t.TempDir(), "parley.db")
	for _, suffix := range []string{"", "-wal"} {
		b, err := os.ReadFile(dbPath + suffix)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(crashed+suffix, b, 0o644)
	}
	s.Close()
	dbPath = crashed
	if st, err := os.Stat(dbPath + "-wal"); err != nil || st.Size() == 0 {
		t.Fatalf("no WAL to go stale: %v, %v", st, err)
	}

	text := filepath.Join(t.TempDir(), "notes.txt")
	os.WriteFile(text, []byte("hello"), 0o644)
	before, _ := os.ReadFile(dbPath)
	if _, err := Restore(ctx, text, dbPath); !errors.Is(err, ErrNotDatabase) {
		t.Errorf("Restore(text file) error = %v, want ErrNotDatabase", err)
	}
	if after, _ := os.ReadFile(dbPath); !bytes.Equal(before, after) {
		t.Error("a refused restore changed the database")
	}
	if names := entries(t, filepath.Dir(dbPath)); len(names) != 2 {
		t.Errorf("after a refused restore the directory holds %q, want parley.db and its -wal", names)
	}

	bi, err := Restore(ctx, src, dbPath)
	if err != nil {
		t.Fatalf("Restore() error = %v", err)
	}
	if bi.Users != 1 || bi.Rooms != 1 || bi.Messages != 10 {
		t.Errorf("Restore() = %+v, want 1 user, 1 room, 10 messages", bi)
	}
	if _, err := os.Stat(dbPath + "-wal"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("stale WAL after Restore: %v", err)
	}
	c := mustOpenStore(t, dbPath)
	if _, _, err := c.UserByName(ctx, "bob"); parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("restored database has the replaced user bob: %v", err)
	}
	if _, _, err := c.UserByName(ctx, "ann"); err != nil {
		t.Errorf("restored database has no ann: %v", err)
	}
}

// mustDBAt makes a database at path of schema version, as a program of
// that version made it (migrate, in WAL mode), holding the upgrade world
// of testdata/upgrade when there is a fixture for the version, and
// returns path.
func mustDBAt(t *testing.T, path string, version int) string {
	t.Helper()
	ctx := context.Background()
	cfg := Config{Path: path}
	cfg.defaults()
	db := openDB(path, 1, true, cfg)
	defer db.Close()
	if err := walMode(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := migrateTo(ctx, db, version); err != nil {
		t.Fatalf("migrateTo(%d) error = %v", version, err)
	}
	world, err := os.ReadFile(filepath.Join("testdata", "upgrade", fmt.Sprintf("%04d.sql", version)))
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatal(err)
	}
	if _, err := db.Exec(string(world)); err != nil {
		t.Fatalf("upgrade world of version %d: %v", version, err)
	}
	return path
}

// TestBackupOfEveryVersion: a backup of a database of each schema
// version, this program's and every earlier one, is accepted by Inspect
// and Restore, its schema being the one Parley's migrations make at that
// version.
func TestBackupOfEveryVersion(t *testing.T) {
	ctx := context.Background()
	for _, m := range must(schema.Load(migrations, "migrations/*.sql")) {
		t.Run(fmt.Sprintf("v%d", m.Version), func(t *testing.T) {
			dir := t.TempDir()
			live := mustDBAt(t, filepath.Join(dir, "live.db"), m.Version)
			snap := filepath.Join(dir, "snap.db")
			if _, err := Backup(ctx, live, snap, BackupConfig{}); err != nil {
				t.Fatalf("Backup() error = %v", err)
			}
			if bi, err := Inspect(ctx, snap); err != nil || bi.Version != m.Version {
				t.Errorf("Inspect(backup of version %d) = %+v, %v; want version %d", m.Version, bi, err, m.Version)
			}
			if bi, err := Restore(ctx, snap, filepath.Join(dir, "restored.db")); err != nil || bi.Version != m.Version {
				t.Errorf("Restore(backup of version %d) = %+v, %v; want version %d", m.Version, bi, err, m.Version)
			}
		})
	}
}

// TestInspectForeignSchema: a Parley backup with an object Parley's
// migrations do not make (a trigger that keeps deleted text, a table, a
// view, an index), without one they make, or with one changed (a column
// added, an index of other columns), or whose schema_migrations claims a
// version its schema is not, is refused by Inspect and by Restore with
// ErrForeignSchema naming the object, and the restore changes nothing.
func TestInspectForeignSchema(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.db")
	s := mustOpenStore(t, filepath.Join(dir, "live.db"))
	u := parleytest.MustCreateUser(t, s, "ann")
	r := parleytest.MustCreateRoom(t, s, u, "kept", 0)
	parleytest.MustSend(t, s, r, u, "deleted means deleted")
	if _, err := Backup(ctx, filepath.Join(dir, "live.db"), good, BackupConfig{}); err != nil {
		t.Fatal(err)
	}
	copyOf := func(name string, stmts ...string) string {
		b, err := os.ReadFile(good)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		execFile(t, p, stmts...)
		return p
	}
	ms := must(schema.Load(migrations, "migrations/*.sql"))
	claims := mustDBAt(t, filepath.Join(dir, "claims.db"), 3)
	for _, m := range ms[3:] {
		execFile(t, claims, fmt.Sprintf("INSERT INTO schema_migrations VALUES (%d, '%s', 0)", m.Version, m.Name))
	}

	for _, tc := range []struct {
		name, path, says string
	}{
		{"trigger keeping deleted text", copyOf("audit.db",
			"CREATE TABLE audit_keep(body TEXT)",
			"CREATE TRIGGER keep_deleted AFTER UPDATE OF body ON messages WHEN new.body='' BEGIN INSERT INTO audit_keep VALUES (old.body); END"),
			"trigger keep_deleted not Parley's"},
		{"trigger", copyOf("trigger.db",
			"CREATE TRIGGER undelete AFTER UPDATE OF body ON messages WHEN new.body = '' BEGIN UPDATE messages SET body = old.body WHERE room_id = new.room_id AND seq = new.seq; END"),
			"trigger undelete not Parley's"},
		{"table", copyOf("table.db", "CREATE TABLE audit_keep (body TEXT)"), "table audit_keep not Parley's"},
		{"view", copyOf("view.db", "CREATE VIEW hashes AS SELECT name, password_hash FROM users"), "view hashes not Parley's"},
		{"index", copyOf("index.db", "CREATE INDEX messages_body ON messages (body)"), "index messages_body not Parley's"},
		{"column added", copyOf("column.db", "ALTER TABLE users ADD COLUMN note TEXT"), "table users changed"},
		{"index changed", copyOf("changed.db", "DROP INDEX members_user", "CREATE INDEX members_user ON members (user_id, room_id)"), "index members_user changed"},
		{"index dropped", copyOf("dropped.db", "DROP INDEX members_user"), "index members_user missing"},
		{"version claimed", claims, "missing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := Inspect(ctx, tc.path); !errors.Is(err, ErrForeignSchema) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("Inspect(%s) error = %v, want %v saying %q", tc.name, err, ErrForeignSchema, tc.says)
			}
			target := filepath.Join(t.TempDir(), "parley.db")
			mustOpenStore(t, target).Close()
			before, _ := os.ReadFile(target)
			names := entries(t, filepath.Dir(target))
			if _, err := Restore(ctx, tc.path, target); !errors.Is(err, ErrForeignSchema) {
				t.Errorf("Restore(%s) error = %v, want %v", tc.name, err, ErrForeignSchema)
			}
			if after, _ := os.ReadFile(target); !bytes.Equal(before, after) {
				t.Errorf("a refused Restore(%s) changed the database", tc.name)
			}
			if now := entries(t, filepath.Dir(target)); !slices.Equal(names, now) {
				t.Errorf("after a refused Restore(%s) the directory holds %q, before %q", tc.name, now, names)
			}
		})
	}
}

// TestInspectNormalSQL: statements that differ only in layout compare
// equal, and ones that differ in a word, a quoted string or what a
// comment hides do not.
func TestInspectNormalSQL(t *testing.T) {
	for _, tc := range []struct {
		name, a, b string
		equal      bool
	}{
		{"lines", createMigrationsTable, "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)", true},
		{"comment", "CREATE TABLE t (\n\ta INTEGER, -- the a\n\tb TEXT\n)", "CREATE TABLE t (a INTEGER, b TEXT)", true},
		{"block comment", "CREATE TABLE t (a /* x */ INTEGER)", "CREATE TABLE t (a INTEGER)", true},
		{"word", "CREATE TABLE t (a INTEGER)", "CREATE TABLE t (a TEXT)", false},
		{"commented out", "CREATE TABLE t (a INTEGER, -- b TEXT\n c TEXT)", "CREATE TABLE t (a INTEGER, b TEXT, c TEXT)", false},
		{"string", "CREATE VIEW v AS SELECT 'a  b'", "CREATE VIEW v AS SELECT 'a b'", false},
		{"quoted comment", "CREATE VIEW v AS SELECT '--', 1", "CREATE VIEW v AS SELECT '--'", false},
		{"quoted name", `CREATE TABLE "a  b" (x)`, `CREATE TABLE "a b" (x)`, false},
		{"words apart", "CREATE TABLE t (a INTEGER)", "CREATE TABLE t (aINTEGER)", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := normalSQL(tc.a) == normalSQL(tc.b); got != tc.equal {
				t.Errorf("normalSQL(%q) = %q, normalSQL(%q) = %q; equal %v, want %v", tc.a, normalSQL(tc.a), tc.b, normalSQL(tc.b), got, tc.equal)
			}
		})
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
