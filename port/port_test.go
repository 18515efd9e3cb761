package port_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"parley"
	"parley/parleytest"
	"parley/port"
	"parley/postgres"
	"parley/postgres/pgtest"
	"parley/sqlite"
)

// bigRoom is the room newSource adds to the upgrade world: bigMessages
// messages of erin's, some keyed, edited or deleted, over several batches.
const (
	bigRoom     = "r-big"
	bigMessages = 2500
)

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

// newSource makes a SQLite database of the newest schema holding the
// upgrade world (parleytest/upgrade.go, written by the newest of
// sqlite/testdata/upgrade) and bigRoom, and returns its path.
func newSource(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "parley.db")
	if _, err := sqlite.Migrate(ctx, path, true); err != nil {
		t.Fatal(err)
	}
	fixtures, _ := filepath.Glob("../sqlite/testdata/upgrade/*.sql")
	if len(fixtures) == 0 {
		t.Fatal("no fixture in ../sqlite/testdata/upgrade")
	}
	slices.Sort(fixtures)
	world, err := os.ReadFile(fixtures[len(fixtures)-1])
	if err != nil {
		t.Fatal(err)
	}
	const t0 = 1767225600000000
	big := fmt.Sprintf(`
		INSERT INTO users (id, name, password_hash, created_at) VALUES ('u-erin', 'erin', x'e1', %[1]d);
		INSERT INTO rooms (id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, direct_key, last_change, num, retention_seconds)
			VALUES ('%[2]s', 'group', 'Big', 0, 1, %[3]d, %[1]d + %[3]d, %[1]d, NULL, %[3]d / 10, 99, 86400);
		INSERT INTO members (room_id, user_id, read_seq, joined_at, role) VALUES ('%[2]s', 'u-erin', 1234, %[1]d, 'owner');
		INSERT INTO name_holds (name, until) VALUES ('frank', %[1]d + 5);
		INSERT INTO api_keys (id, name, user_id, room_id, hash, scopes, created_at, revoked_at) VALUES
			('k-1', 'deploys', 'u-erin', NULL, x'5eed', 'send read', %[1]d + 1, NULL),
			('k-2', 'hook', 'u-erin', '%[2]s', x'600d', 'send', %[1]d + 2, %[1]d + 3);
		WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %[3]d)
		INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change,
				pinned_by, pinned_at, pin_change)
			SELECT '%[2]s', i, printf('m-big-%%05d', i), 'u-erin', 'erin',
				CASE WHEN i %% 13 = 0 THEN '' ELSE 'pineapple number ' || i || ' ünïcode' END,
				CASE WHEN i %% 7 = 0 THEN 'c' || i ELSE '' END,
				%[1]d + i,
				CASE WHEN i %% 11 = 0 AND i %% 13 <> 0 THEN %[1]d + i + 7 END,
				CASE WHEN i %% 13 = 0 THEN %[1]d + i + 9 END,
				CASE WHEN i %% 10 = 0 THEN i / 10 ELSE 0 END,
				-- a few pinned messages (pins.go): every 170th, none deleted
				CASE WHEN i %% 170 = 0 THEN 'u-erin' ELSE '' END,
				CASE WHEN i %% 170 = 0 THEN %[1]d + i + 5 END,
				CASE WHEN i %% 170 = 0 THEN i / 10 ELSE 0 END
			FROM n;
		INSERT INTO files (id, room_id, uploader, name, type, size, sha256, preview, created_at, seq, claim) VALUES
			('f-one', '%[2]s', 'u-erin', 'a.png', 'image/png', 1234, x'a1a1', 1, %[1]d + 4, 1, 'r:1'),
			('f-two', '%[2]s', 'u-erin', 'b.txt', 'text/plain; charset=utf-8', 5, x'b2b2', 0, %[1]d + 5, NULL, NULL);
		UPDATE messages SET files = '[{"id":"f-one","name":"a.png","type":"image/png","size":1234,"preview":true}]'
			WHERE room_id = '%[2]s' AND seq = 1;
		INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');`, t0, bigRoom, bigMessages)
	db, err := sql.Open(sqlDriver(t), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range []string{string(world), big} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("fill the source: %v", err)
		}
	}
	return path
}

// newTarget returns the URL of an empty schema of PARLEY_TEST_POSTGRES,
// or skips the test.
func newTarget(t *testing.T) string {
	t.Helper()
	return pgtest.Schema(t)
}

func config(t *testing.T, src, target string) port.Config {
	t.Helper()
	db := sqlite.OpenReadOnly(src)
	t.Cleanup(func() { db.Close() })
	return port.Config{
		Source: db, Target: target, Batch: 500,
		Migrate: func(ctx context.Context) error {
			_, err := postgres.Migrate(ctx, target, true)
			return err
		},
	}
}

func openPostgres(t *testing.T, url string) *postgres.Store {
	t.Helper()
	s, err := postgres.Open(context.Background(), postgres.Config{URL: url})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func openSQLite(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// count is the rows of table in the target.
func count(t *testing.T, url, table string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+table).Scan(&n); err != nil {
		t.Fatalf("count %s: %v", table, err)
	}
	return n
}

// TestPortUpgradeWorld: the upgrade world, ported, is what the PostgreSQL
// store returns as the world (roles, bans, edits, tombstones, change
// keys, tokens, search), and the big room reads alike from both stores.
func TestPortUpgradeWorld(t *testing.T) {
	ctx := context.Background()
	target := newTarget(t)
	src := newSource(t)
	res, err := port.Run(ctx, config(t, src, target))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Resumed || res.Already || res.Messages < bigMessages || !res.Report.OK() {
		t.Errorf("Run = %+v, want a first port of every message, verified", res)
	}
	pg := openPostgres(t, target)
	compareRoom(t, openSQLite(t, src), pg, bigRoom)
	parleytest.CheckUpgrade(t, pg, parleytest.UpgradeFeatures{Roles: true, Changes: true, ChangeKeys: true})
}

// compareRoom checks that both stores answer alike for room: its info,
// history pages both ways, changes, search.
func compareRoom(t *testing.T, a, b parley.Store, room string) {
	t.Helper()
	ctx := context.Background()
	ra, err1 := a.Room(ctx, room)
	rb, err2 := b.Room(ctx, room)
	if err1 != nil || err2 != nil || fmt.Sprint(ra) != fmt.Sprint(rb) {
		t.Errorf("Room(%s): %+v, %v; ported %+v, %v", room, ra, err1, rb, err2)
	}
	q, _ := parley.ParseQuery("pineapple")
	for _, c := range []struct {
		name string
		read func(s parley.Store) (any, error)
	}{
		{"newest", func(s parley.Store) (any, error) { return s.Messages(ctx, room, parley.Newest(100)) }},
		{"before 1000", func(s parley.Store) (any, error) {
			return s.Messages(ctx, room, parley.Page{Before: 1000, After: -1, Limit: 100})
		}},
		{"after 900", func(s parley.Store) (any, error) { return s.Messages(ctx, room, parley.Page{After: 900, Limit: 100}) }},
		{"changed after 50", func(s parley.Store) (any, error) { return s.Changed(ctx, room, 50, 100) }},
		{"search", func(s parley.Store) (any, error) { return s.SearchRoom(ctx, room, q, 0, 100) }},
		{"members", func(s parley.Store) (any, error) { return s.RoomMembers(ctx, room) }},
		{"pins", func(s parley.Store) (any, error) { return s.Pins(ctx, room, 0, 100) }},
	} {
		ga, err1 := c.read(a)
		gb, err2 := c.read(b)
		// As JSON: a message's pin is a pointer, which %+v prints as an
		// address.
		ja, _ := json.Marshal(ga)
		jb, _ := json.Marshal(gb)
		if sa, sb := string(ja), string(jb); err1 != nil || err2 != nil || sa != sb || len(sa) < 10 {
			t.Errorf("%s of %s differs:\nsqlite   %.500s, %v\npostgres %.500s, %v", c.name, room, sa, err1, sb, err2)
		}
	}
}

// TestPortResume: a port stopped after some batches, run again, finishes
// with every row once; a third run finds the port finished and only
// verifies.
func TestPortResume(t *testing.T) {
	ctx := context.Background()
	target := newTarget(t)
	src := newSource(t)
	cfg := config(t, src, target)
	// The small tables are copied first, one batch each that has rows,
	// then the messages' parts at once: stop after their first batch.
	cfg.StopAfter = 1
	srcDB, err := sql.Open(sqlDriver(t), src)
	if err != nil {
		t.Fatal(err)
	}
	defer srcDB.Close()
	for _, name := range port.TableNames() {
		var rows int
		if err := srcDB.QueryRow(`SELECT count(*) FROM ` + name).Scan(&rows); err != nil {
			t.Fatal(err)
		}
		if name != "messages" && rows > 0 {
			cfg.StopAfter++
		}
	}
	if _, err := port.Run(ctx, cfg); !errors.Is(err, port.ErrStopped) {
		t.Fatalf("Run(StopAfter %d) = %v, want ErrStopped", cfg.StopAfter, err)
	}
	if n := count(t, target, "messages"); n == 0 || n >= bigMessages {
		t.Fatalf("after the stop the target holds %d messages, want some of %d", n, bigMessages)
	}
	cfg.StopAfter = 0
	res, err := port.Run(ctx, cfg)
	if err != nil || !res.Resumed || res.Already {
		t.Fatalf("Run again = %+v, %v; want a resumed port", res, err)
	}
	var want int64
	for _, tr := range res.Report.Tables {
		if tr.Name == "messages" {
			want = tr.Source
		}
	}
	if n := count(t, target, "messages"); n != want {
		t.Errorf("the target holds %d messages, want %d", n, want)
	}
	res, err = port.Run(ctx, cfg)
	if err != nil || !res.Already || len(res.Copied) != 0 {
		t.Errorf("Run a third time = %+v, %v; want only a verification", res, err)
	}
}

// TestPortRefusesForeignTarget: a target holding anything but this
// source's unfinished port is refused, and left as it was.
func TestPortRefusesForeignTarget(t *testing.T) {
	ctx := context.Background()
	src := newSource(t)
	for _, c := range []struct {
		name  string
		setup func(t *testing.T, url string)
	}{
		{"a table of someone else's", func(t *testing.T, url string) {
			pgtest.Exec(t, url, "CREATE TABLE invoices (id int)")
		}},
		{"a Parley database with data", func(t *testing.T, url string) {
			if _, err := postgres.Migrate(ctx, url, true); err != nil {
				t.Fatal(err)
			}
			pgtest.Exec(t, url, `INSERT INTO users VALUES ('u-x', 'x', '', now())`)
		}},
		{"the unfinished port of another source", func(t *testing.T, url string) {
			other := newSource(t)
			db := sqlite.OpenReadOnly(other)
			defer db.Close()
			// A different source: one more user.
			rw, err := sql.Open(sqlDriver(t), other)
			if err != nil {
				t.Fatal(err)
			}
			defer rw.Close()
			if _, err := rw.Exec(`INSERT INTO users VALUES ('u-zed', 'zed', x'00', 1)`); err != nil {
				t.Fatal(err)
			}
			cfg := config(t, other, url)
			cfg.StopAfter = 1
			if _, err := port.Run(ctx, cfg); !errors.Is(err, port.ErrStopped) {
				t.Fatalf("port of the other source: %v", err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := newTarget(t)
			c.setup(t, target)
			before := dump(t, target)
			_, err := port.Run(ctx, config(t, src, target))
			if !errors.Is(err, port.ErrForeign) {
				t.Errorf("Run = %v, want ErrForeign", err)
			}
			if after := dump(t, target); after != before {
				t.Errorf("the refused port changed the target:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// dump is the target's tables and their row counts.
func dump(t *testing.T, url string) string {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT tablename FROM pg_tables WHERE schemaname = current_schema() ORDER BY tablename`)
	if err != nil {
		t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, n := range names {
		var c int64
		if err := conn.QueryRow(ctx, "SELECT count(*) FROM "+n).Scan(&c); err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s=%d ", n, c)
	}
	return b.String()
}

// TestVerifyFindsDifferences: Verify names the table or the room that
// differs after the port.
func TestVerifyFindsDifferences(t *testing.T) {
	ctx := context.Background()
	target := newTarget(t)
	src := newSource(t)
	cfg := config(t, src, target)
	if _, err := port.Run(ctx, cfg); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, c := range []struct {
		name, change, undo string
		check              func(r port.Report) bool
	}{
		{"a message's body",
			`UPDATE messages SET body = body || '!' WHERE room_id = 'r-big' AND seq = 1000`,
			`UPDATE messages SET body = rtrim(body, '!') WHERE room_id = 'r-big' AND seq = 1000`,
			func(r port.Report) bool { return r.DifferN == 1 && r.Differ[0] == bigRoom }},
		{"an edit's time",
			`UPDATE messages SET edited_at = edited_at + interval '1 microsecond' WHERE room_id = 'r-general' AND edited_at IS NOT NULL`,
			`UPDATE messages SET edited_at = edited_at - interval '1 microsecond' WHERE room_id = 'r-general' AND edited_at IS NOT NULL`,
			func(r port.Report) bool { return r.DifferN == 1 && r.Differ[0] == "r-general" }},
		{"a read position",
			`UPDATE members SET read_seq = read_seq + 1 WHERE room_id = 'r-big'`,
			`UPDATE members SET read_seq = read_seq - 1 WHERE room_id = 'r-big'`,
			func(r port.Report) bool { return !tableSame(r, "members") && tableSame(r, "messages") }},
		{"an API key's room",
			`UPDATE api_keys SET room_id = NULL WHERE id = 'k-2'`,
			`UPDATE api_keys SET room_id = 'r-big' WHERE id = 'k-2'`,
			func(r port.Report) bool { return !tableSame(r, "api_keys") }},
		{"a token too many",
			`INSERT INTO tokens VALUES ('\xff', 'u-erin', now(), now())`,
			`DELETE FROM tokens WHERE hash = '\xff'`,
			func(r port.Report) bool { return !tableSame(r, "tokens") }},
		{"a missing search vector",
			`UPDATE messages SET tsv = NULL WHERE room_id = 'r-big' AND seq = 1`,
			`UPDATE messages SET tsv = to_tsvector('simple', body) WHERE room_id = 'r-big' AND seq = 1`,
			func(r port.Report) bool { return r.Unindexed == 1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			pgtest.Exec(t, target, c.change)
			defer pgtest.Exec(t, target, c.undo)
			r, err := port.Verify(ctx, cfg)
			if !errors.Is(err, port.ErrMismatch) || r.OK() || !c.check(r) {
				t.Errorf("Verify = %v\n%s; want this difference found", err, r)
			}
		})
	}
	if r, err := port.Verify(ctx, cfg); err != nil || !r.OK() {
		t.Errorf("Verify after the undos = %v\n%s", err, r)
	}
}

func tableSame(r port.Report, name string) bool {
	for _, t := range r.Tables {
		if t.Name == name {
			return t.Same
		}
	}
	return false
}
