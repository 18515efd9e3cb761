package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"parley/parleytest"
)

// runCLI runs `parley args...` as main does and returns what it printed.
func runCLI(args ...string) (stdout, stderr string, err error) {
	var out, errs bytes.Buffer
	err = run(context.Background(), args, &out, &errs)
	return out.String(), errs.String(), err
}

// roomHistory pages through a room's history over REST, oldest first.
func roomHistory(t *testing.T, c *client, roomID string) []message {
	t.Helper()
	var all []message
	var after int64
	for {
		var page struct {
			Messages []message `json:"messages"`
		}
		path := fmt.Sprintf("/api/rooms/%s/messages?after=%d&limit=100", roomID, after)
		if st := c.do("GET", path, nil, &page); st != http.StatusOK {
			t.Fatalf("GET %s: %d", path, st)
		}
		if len(page.Messages) == 0 {
			return all
		}
		all = append(all, page.Messages...)
		after = page.Messages[len(page.Messages)-1].Seq
	}
}

var backupMessagesRE = regexp.MustCompile(`, (\d+) messages, `)

// TestBackupRestoreEndToEnd: `parley backup` of a server process that is
// taking sends, then `parley restore` into a new directory and a server
// on it: the restored history is seq 1..N with no hole, holds every
// message acknowledged before the backup began, as it was, and N is what
// the backup said; the restored node logs the user in and finds a word.
func TestBackupRestoreEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dir := t.TempDir()
	p := startServeProcess(t, "--data", dir, "--sync", "normal", "--rest-send-rate", "0")
	c, _ := mustSignUp(t, p.addr, "keeper")
	var r room
	if st := c.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "kept"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if _, ok := postMessage(http.DefaultClient, p.addr, c.token, r.ID, "the first one says pineapple"); !ok {
		t.Fatal("first message refused")
	}

	var (
		mu    sync.Mutex
		acked = map[int64]string{1: "the first one says pineapple"}
		stop  = make(chan struct{})
		wg    sync.WaitGroup
	)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 8}, Timeout: 10 * time.Second}
	for i := range 8 {
		wg.Go(func() {
			for j := 0; ; j++ {
				select {
				case <-stop:
					return
				default:
				}
				body := fmt.Sprintf("sender %d message %d", i, j)
				m, ok := postMessage(hc, p.addr, c.token, r.ID, body)
				if !ok {
					t.Errorf("send %q refused", body)
					return
				}
				mu.Lock()
				acked[m.Seq] = body
				mu.Unlock()
			}
		})
	}
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked)
	}
	stopped := false
	stopSenders := func() {
		if !stopped {
			stopped = true
			close(stop)
			wg.Wait()
		}
	}
	defer stopSenders()
	parleytest.Eventually(t, 30*time.Second, func() bool { return count() >= 500 }, "senders stuck at %d messages", count())

	mu.Lock()
	before := maps.Clone(acked)
	mu.Unlock()
	dest := filepath.Join(t.TempDir(), "parley-backup.db")
	out, _, err := runCLI("backup", "--data", dir, dest)
	if err != nil {
		t.Fatalf("parley backup: %v", err)
	}
	after := count()
	parleytest.Eventually(t, 30*time.Second, func() bool { return count() >= after+50 }, "no send went through after the backup")
	stopSenders()
	m := backupMessagesRE.FindStringSubmatch(out)
	if m == nil || !strings.Contains(out, "schema version") || !strings.Contains(out, "1 users, 1 rooms") {
		t.Fatalf("parley backup printed %q, want the schema version and the counts", out)
	}
	saved, _ := strconv.Atoi(m[1])
	if saved < len(before) || saved > after {
		t.Errorf("backup saved %d messages; %d were acknowledged before it began, %d when it ended", saved, len(before), after)
	}

	restored := filepath.Join(t.TempDir(), "restored")
	out, _, err = runCLI("restore", "--data", restored, dest)
	if err != nil || !strings.Contains(out, fmt.Sprintf("%d messages", saved)) {
		t.Fatalf("parley restore = %q, %v; want it to say %d messages", out, err, saved)
	}
	q := startServeProcess(t, "--data", restored, "--sync", "normal")
	rc := newClient(t, q.addr)
	var tok struct{ Token string }
	if st := rc.do("POST", "/api/tokens", map[string]string{"name": "keeper", "password": "correct horse"}, &tok); st != http.StatusCreated {
		t.Fatalf("log in on the restored node: %d", st)
	}
	rc.token = tok.Token
	history := roomHistory(t, rc, r.ID)
	for i, msg := range history {
		if msg.Seq != int64(i+1) {
			t.Fatalf("restored history: seq %d at position %d, want %d (no hole)", msg.Seq, i, i+1)
		}
		if body, ok := acked[msg.Seq]; !ok || body != msg.Body {
			t.Errorf("restored seq %d = %q, acknowledged %q", msg.Seq, msg.Body, body)
		}
	}
	if len(history) != saved {
		t.Errorf("restored history has %d messages, the backup said %d", len(history), saved)
	}
	for seq := range before {
		if seq > int64(len(history)) {
			t.Errorf("seq %d, acknowledged before the backup began, is not in the restored history", seq)
		}
	}
	var hits struct {
		Hits []struct {
			Message message `json:"message"`
		} `json:"hits"`
	}
	if st := rc.do("GET", "/api/me/search?q=pineapple", nil, &hits); st != http.StatusOK || len(hits.Hits) != 1 || hits.Hits[0].Message.Seq != 1 {
		t.Errorf("search on the restored node = %d %+v, want seq 1", st, hits)
	}
	t.Logf("backup of %d messages while %d more were acknowledged: %s", saved, after-len(before), strings.TrimSpace(out))
}

// sqlDriver is the name of the SQLite driver package sqlite registered.
func sqlDriver(t *testing.T) string {
	t.Helper()
	for _, d := range sql.Drivers() {
		if d == "sqlite3" || d == "sqlite" {
			return d
		}
	}
	t.Fatalf("no SQLite driver among %q", sql.Drivers())
	return ""
}

// execDB runs statements on the SQLite database at path.
func execDB(t *testing.T, path string, stmts ...string) {
	t.Helper()
	db, err := sql.Open(sqlDriver(t), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

// dirState is what a data directory holds: each file's name and content,
// or nil when the directory does not exist.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	st := map[string]string{}
	for _, de := range des {
		b, err := os.ReadFile(filepath.Join(dir, de.Name()))
		if err != nil {
			t.Fatal(err)
		}
		st[de.Name()] = string(b)
	}
	return st
}

// TestRestoreRefuses: restore refuses a missing file, a text file, another
// program's SQLite database, a newer schema, a schema Parley did not make
// (an extra trigger, with --force too), the directory of a running server
// and a database that holds data (unless --force), each with an
// error that says so, and changes nothing; an older schema is restored
// with word that serve will upgrade it.
func TestRestoreRefuses(t *testing.T) {
	src := t.TempDir()
	a := MustOpenMain(t, func(c *Config) { c.Data = src })
	mustSignUp(t, a.Addr(), "saved")
	files := t.TempDir()
	snap := filepath.Join(files, "snap.db")
	if _, _, err := runCLI("backup", "--data", src, snap); err != nil {
		t.Fatalf("parley backup: %v", err)
	}
	copyOf := func(name string, stmts ...string) string {
		b, err := os.ReadFile(snap)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(files, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		execDB(t, p, stmts...)
		return p
	}
	text := filepath.Join(files, "notes.txt")
	if err := os.WriteFile(text, []byte("a text file, not a database\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	foreign := filepath.Join(files, "foreign.db")
	execDB(t, foreign, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", "INSERT INTO notes (body) VALUES ('hello')")
	newer := copyOf("newer.db", "INSERT INTO schema_migrations VALUES (9999, '9999_future.sql', 0)")
	// A trigger that copies each deleted message's text into a table of its own.
	trigger := copyOf("trigger.db", "CREATE TABLE audit_keep(body TEXT)",
		"CREATE TRIGGER keep_deleted AFTER UPDATE OF body ON messages WHEN new.body='' BEGIN INSERT INTO audit_keep VALUES (old.body); END")

	// A stopped directory holding data of its own.
	full := t.TempDir()
	b := &Main{Config: testConfig(full)}
	if err := b.Open(context.Background()); err != nil {
		t.Fatal(err)
	}
	mustSignUp(t, b.Addr(), "resident")
	if err := b.Close(context.Background()); err != nil {
		t.Fatal(err)
	}

	fresh := filepath.Join(t.TempDir(), "fresh")
	for _, tc := range []struct {
		name, data, src string
		flags           []string
		want            string
	}{
		{"missing file", fresh, filepath.Join(files, "nope.db"), nil, "no such file"},
		{"text file", fresh, text, nil, "not a SQLite database"},
		{"foreign database", fresh, foreign, nil, "not a Parley database"},
		{"newer schema", fresh, newer, nil, "schema newer than this program's: version 9999"},
		{"claims an older schema", fresh, copyOf("claims.db", "DELETE FROM schema_migrations WHERE version = (SELECT max(version) FROM schema_migrations)"), nil, "schema differs from Parley's"},
		{"extra trigger", fresh, trigger, nil, "schema differs from Parley's: table audit_keep not Parley's, trigger keep_deleted not Parley's"},
		{"extra trigger, replacing", full, trigger, []string{"--force"}, "trigger keep_deleted not Parley's"},
		{"live server", src, snap, []string{"--force"}, "stop the server first"},
		{"holds data", full, snap, nil, "pass --force"},
		{"postgres", fresh, snap, []string{"--store", "postgres://localhost/parley"}, "pg_basebackup"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			was := dirState(t, tc.data)
			_, _, err := runCLI(append(append([]string{"restore", "--data", tc.data}, tc.flags...), tc.src)...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parley restore %s: %v, want an error saying %q", tc.name, err, tc.want)
			}
			if tc.name == "live server" {
				return // the server writes on
			}
			if now := dirState(t, tc.data); !equalState(was, now) {
				t.Errorf("parley restore %s changed %s: %d files before, %d after", tc.name, tc.data, len(was), len(now))
			}
		})
	}
	if _, u := mustSignUp(t, a.Addr(), "still-serving"); u.Name != "still-serving" {
		t.Error("the live server stopped serving after a refused restore")
	}

	out, _, err := runCLI("restore", "--data", full, "--force", snap)
	if err != nil || !strings.Contains(out, "1 users") {
		t.Fatalf("parley restore --force = %q, %v; want 1 user restored", out, err)
	}
	c := MustOpenMain(t, func(c *Config) { c.Data = full })
	cl := newClient(t, c.Addr())
	for name, want := range map[string]int{"saved": http.StatusCreated, "resident": http.StatusUnauthorized} {
		if st := cl.do("POST", "/api/tokens", map[string]string{"name": name, "password": "correct horse"}, nil); st != want {
			t.Errorf("log in as %s after restore --force = %d, want %d", name, st, want)
		}
	}

	// A database a program of the schema before this one made (one
	// claiming it, with this schema, is refused: its schema is not that
	// version's).
	ms := loadMigrations(t, "../../sqlite")
	stmts := []string{`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`}
	for _, m := range ms[:len(ms)-1] {
		stmts = append(stmts, m.SQL, fmt.Sprintf(`INSERT INTO schema_migrations VALUES (%d, '%s', 0)`, m.Version, m.Name))
	}
	older := filepath.Join(files, "older.db")
	execDB(t, older, stmts...)
	out, _, err = runCLI("restore", "--data", filepath.Join(t.TempDir(), "older"), older)
	if err != nil || !strings.Contains(out, "will upgrade it") {
		t.Errorf("parley restore of an older schema = %q, %v; want it restored, saying serve will upgrade it", out, err)
	}
}

// equalState reports whether two dirStates are the same.
func equalState(a, b map[string]string) bool {
	return (a == nil) == (b == nil) && maps.Equal(a, b)
}

// TestBackupRefuses: backup refuses an existing file, a directory with no
// database and PostgreSQL (saying which tools to use), and writes nothing.
func TestBackupRefuses(t *testing.T) {
	dir := t.TempDir()
	MustOpenMain(t, func(c *Config) { c.Data = dir })
	out := t.TempDir()
	exists := filepath.Join(out, "exists.db")
	if err := os.WriteFile(exists, []byte("keep"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"existing file", []string{"--data", dir, exists}, "exists"},
		{"no database", []string{"--data", t.TempDir(), filepath.Join(out, "a.db")}, "no database"},
		{"postgres", []string{"--store", "postgres://localhost/parley", filepath.Join(out, "b.db")}, "pg_dump"},
		{"no file named", []string{"--data", dir}, "no DEST"},
		{"negative rate", []string{"--data", dir, "--backup-rate", "-1", filepath.Join(out, "c.db")}, "--backup-rate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, _, err := runCLI(append([]string{"backup"}, tc.args...)...); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("parley backup %q: %v, want an error saying %q", tc.args, err, tc.want)
			}
		})
	}
	if st := dirState(t, out); len(st) != 1 || st["exists.db"] != "keep" {
		t.Errorf("after the refusals %s holds %v, want exists.db as it was", out, slices.Sorted(maps.Keys(st)))
	}
	for _, cmd := range []string{"backup", "restore"} {
		if _, errs, err := runCLI(cmd, "-h"); exitCode(err) != 0 || !strings.Contains(errs, "PARLEY_DATA") {
			t.Errorf("parley %s -h: %v, printed %q; want its flags and exit 0", cmd, err, errs)
		}
	}
	if out, _, _ := runCLI("-h"); !strings.Contains(out, "backup") || !strings.Contains(out, "restore") {
		t.Errorf("parley -h does not list backup and restore:\n%s", out)
	}
}
