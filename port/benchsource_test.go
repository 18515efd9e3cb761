package port_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"parley/sqlite"
)

// TestBenchSource builds the source of the port's benchmark
// (BENCHMARKS.md, "parley port"), when PARLEY_PORT_BENCH_SOURCE names a
// data directory that does not exist yet: a node's database of
// PARLEY_PORT_BENCH_MESSAGES messages (default 1,000,000) over 1,000 group
// rooms of 20 members among 5,000 users, bodies of 6 to 13 words from a
// vocabulary of 64, one message in 20 edited, one in 50 deleted, one in
// 10 sent with a client id, and the full-text index rebuilt. Without the
// variable it is skipped.
func TestBenchSource(t *testing.T) {
	dir := os.Getenv("PARLEY_PORT_BENCH_SOURCE")
	if dir == "" {
		t.Skip("PARLEY_PORT_BENCH_SOURCE is not set: set it to a new data directory to build the port benchmark's source")
	}
	n := 1_000_000
	if s := os.Getenv("PARLEY_PORT_BENCH_MESSAGES"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Fatalf("%s exists: name a new directory", dir)
	}
	if err := os.MkdirAll(dir, 0o750); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "parley.db")
	ctx := context.Background()
	if _, err := sqlite.Migrate(ctx, path, true); err != nil {
		t.Fatal(err)
	}
	var words []string
	for i := range 64 {
		words = append(words, fmt.Sprintf(`"%s%d"`, []string{"lorem", "ipsum", "dolor", "sit", "amet", "chat", "room", "deploy"}[i%8], i))
	}
	vocab := "'[" + strings.Join(words, ",") + "]'"
	word := func(k int) string {
		return fmt.Sprintf("json_extract(%s, '$[' || ((i * %d + %d) %% 64) || ']')", vocab, 2*k+7, k*k+3)
	}
	var body []string
	for k := range 13 {
		w := word(k)
		if k >= 6 {
			w = fmt.Sprintf("CASE WHEN i %% 8 >= %d THEN ' ' || %s ELSE '' END", k-5, w)
		} else if k > 0 {
			w = "' ' || " + w
		}
		body = append(body, w)
	}
	const t0 = 1767225600000000
	perRoom := n / 1000
	stmts := []string{
		fmt.Sprintf(`WITH RECURSIVE u(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM u WHERE i < 4999)
			INSERT INTO users (id, name, password_hash, created_at)
			SELECT printf('u%%05d', i), printf('user%%05d', i), randomblob(48), %d + i FROM u`, t0),
		fmt.Sprintf(`WITH RECURSIVE u(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM u WHERE i < 4999)
			INSERT INTO tokens (hash, user_id, created_at, expires_at)
			SELECT randomblob(32), printf('u%%05d', i), %d + i, %d + 86400000000 * 30 FROM u`, t0, t0),
		fmt.Sprintf(`WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 999)
			INSERT INTO rooms (id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, direct_key, last_change, num)
			SELECT printf('r%%04d', i), 'group', 'Room ' || i, 0, 20, %d, %d + %d * 1000, %d + i, NULL, 0, i + 1 FROM r`, perRoom, t0, perRoom, t0),
		`WITH RECURSIVE m(k) AS (SELECT 0 UNION ALL SELECT k + 1 FROM m WHERE k < 19)
			INSERT INTO members (room_id, user_id, read_seq, joined_at, role)
			SELECT r.id, printf('u%05d', (r.num * 37 + m.k * 250) % 5000), r.last_seq - m.k,
				r.created_at + m.k, CASE WHEN m.k = 0 THEN 'owner' WHEN m.k = 1 THEN 'admin' ELSE 'member' END
			FROM rooms r, m`,
		fmt.Sprintf(`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d)
			INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change)
			SELECT r.id, s.i, printf('m%%04d%%07d', r.num, s.i), printf('u%%05d', (r.num * 37 + (s.i %% 20) * 250) %% 5000),
				printf('user%%05d', (r.num * 37 + (s.i %% 20) * 250) %% 5000),
				CASE WHEN s.i %% 50 = 0 THEN '' ELSE %s END,
				CASE WHEN s.i %% 10 = 1 THEN 'c' || s.i ELSE '' END,
				%d + s.i * 1000,
				CASE WHEN s.i %% 20 = 0 AND s.i %% 50 <> 0 THEN %d + s.i * 1000 + 500 END,
				CASE WHEN s.i %% 50 = 0 THEN %d + s.i * 1000 + 700 END,
				CASE WHEN s.i %% 20 = 0 OR s.i %% 50 = 0 THEN s.i / 10 ELSE 0 END
			FROM rooms r, s ORDER BY r.id, s.i`, perRoom, strings.Join(body, " || "), t0, t0, t0),
		`UPDATE rooms SET last_change = (SELECT coalesce(max(change), 0) FROM messages WHERE room_id = rooms.id)`,
		`INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')`,
	}
	db, err := sql.Open(sqlDriver(t), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, q := range stmts {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%.200s: %v", q, err)
		}
	}
	var got int64
	if err := db.QueryRow(`SELECT count(*) FROM messages`).Scan(&got); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %d messages", path, got)
}
