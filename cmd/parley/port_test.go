package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5"

	"parley/postgres/pgtest"
	"parley/stomp"
)

// portProcess runs `parley port args...` as a process of its own and
// returns what it printed and its exit code.
func portProcess(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], append([]string{"port"}, args...)...)
	cmd.Env = append(os.Environ(), "PARLEY_TEST_EXEC_CLI=1")
	var out, errs bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errs
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return out.String(), errs.String(), ee.ExitCode()
	}
	if err != nil {
		t.Fatalf("parley port: %v", err)
	}
	return out.String(), errs.String(), 0
}

// pgQuery runs one query that returns one int64 on the target.
func pgInt(t *testing.T, url, q string) int64 {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int64
	if err := conn.QueryRow(ctx, q).Scan(&n); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return n
}

// pages is what a node answers: each request's status and body, by
// "user GET path", and each STOMP replay's frames.
type pages map[string]string

// snapshot reads, as each of users, the pages a client reads: the room
// list, each room, its history both ways and across pages, its changes,
// members, bans and searches, and the replays of since-seq and
// since-change over STOMP.
func snapshot(t *testing.T, addr string, users map[string]*client, rooms []string) pages {
	t.Helper()
	got := pages{}
	names := make([]string, 0, len(users))
	for n := range users {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		c := *users[name]
		c.base = "http://" + addr
		paths := []string{"/api/me", "/api/me/rooms?limit=2", "/api/me/rooms", "/api/me/search?q=pineapple&limit=5", "/api/me/search?q=pineapple"}
		for _, r := range rooms {
			base := "/api/rooms/" + r
			paths = append(paths, base, base+"/members", base+"/bans",
				base+"/messages", base+"/messages?before=60&limit=50", base+"/messages?after=0&limit=100",
				base+"/messages?after=100&limit=100", base+"/messages?changed_after=0", base+"/messages?changed_after=3",
				base+"/messages?q=pineapple", base+"/messages?q=pineapple&before=50&limit=3", base+"/messages?q=edited")
		}
		for _, p := range paths {
			var raw json.RawMessage
			st := c.do("GET", p, nil, &raw)
			got[name+" GET "+p] = fmt.Sprintf("%d %s", st, raw)
		}
	}
	// The replays after every page: a STOMP session sets its user's
	// last_seen_at in the member pages, which a node keeps in memory (in
	// Redis in a cluster), not in the store.
	for _, name := range names {
		c := *users[name]
		c.base = "http://" + addr
		for _, r := range rooms {
			var info struct {
				LastSeq    int64 `json:"last_seq"`
				LastChange int64 `json:"last_change"`
			}
			if st := c.do("GET", "/api/rooms/"+r, nil, &info); st != http.StatusOK {
				continue // not a member: the GETs above have the refusal
			}
			seq, change := max(0, info.LastSeq-30), max(0, info.LastChange-6) // no since past the end: refused
			got[name+" since-seq "+r] = replay(t, addr, c.token, "/topic/rooms."+r, fmt.Sprintf("since-seq:%d", seq), info.LastSeq-seq)
			got[name+" since-change "+r] = replay(t, addr, c.token, "/topic/rooms."+r+".events", fmt.Sprintf("since-change:%d", change), info.LastChange-change)
		}
	}
	return got
}

// replay subscribes to dest with the header since and returns the n
// frames the node replays (edits and deletions only, on an events
// destination, where presence may come too): each MESSAGE's headers that
// the store decides (not the subscription's nor the node's) and its body.
func replay(t *testing.T, addr, token, dest, since string, n int64) string {
	t.Helper()
	sc := dialStompAt(t, "websocket", addr, token)
	defer sc.conn.Close()
	sc.send("SUBSCRIBE\nid:1\ndestination:" + dest + "\n" + since + "\nreceipt:sub\n\n\x00")
	sc.expect("RECEIPT", "receipt-id:sub")
	var b strings.Builder
	for got := int64(0); got < n; {
		f := sc.read()
		if f.Command != stomp.Message {
			t.Fatalf("replay of %s: got %v", dest, f)
		}
		if ev, ok := f.Lookup("event"); ok && string(ev) != "edited" && string(ev) != "deleted" {
			continue
		}
		got++
		for _, h := range []string{"event", "seq", "change", "sender", "sender-name", "sent-at", "client-id", "edited-at", "deleted"} { // message-id: each frame's own
			if v, ok := f.Lookup(h); ok {
				fmt.Fprintf(&b, "%s:%s ", h, v)
			}
		}
		fmt.Fprintf(&b, "%s\n", f.Body)
	}
	return b.String()
}

// TestPortEndToEnd: a SQLite node filled over REST (rooms, members,
// roles, a ban, edits, deletions, read positions, a direct room), then
// stopped and ported; a cluster node (a parley serve process) on the
// PostgreSQL database answers every page and replay as the old node did,
// the same tokens and passwords let the users in, and the counters go on.
// While the old node runs, the port is refused.
func TestPortEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	env := needCluster(t)
	dir := t.TempDir()
	p := startServeProcess(t, "--data", dir, "--rest-send-rate", "0")
	users := map[string]*client{}
	ids := map[string]string{}
	for _, n := range []string{"alice", "bob", "carol", "dave"} {
		c, u := mustSignUp(t, p.addr, n)
		users[n], ids[n] = c, u.ID
	}
	alice, bob := users["alice"], users["bob"]
	var general, dm room
	if st := alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "General", "capacity": 10}, &general); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	for _, n := range []string{"bob", "carol", "dave"} {
		if st := users[n].do("POST", "/api/rooms/"+general.ID+"/members", nil, nil); st != http.StatusCreated {
			t.Fatalf("%s joins: %d", n, st)
		}
	}
	if st := alice.do("PUT", "/api/rooms/"+general.ID+"/members/"+ids["bob"], map[string]string{"role": "admin"}, nil); st != http.StatusOK {
		t.Fatalf("make bob admin: %d", st)
	}
	if st := bob.do("DELETE", "/api/rooms/"+general.ID+"/members/"+ids["dave"]+"?ban=true", nil, nil); st != http.StatusNoContent {
		t.Fatalf("ban dave: %d", st)
	}
	if st := alice.do("POST", "/api/rooms", map[string]any{"kind": "direct", "peer": ids["bob"]}, &dm); st != http.StatusCreated {
		t.Fatalf("direct room: %d", st)
	}
	senders := []string{"alice", "bob", "carol"}
	for i := 1; i <= 150; i++ {
		body := map[string]string{"body": fmt.Sprintf("message %d of %s", i, senders[i%3])}
		if i%4 == 0 {
			body["body"] += " pineapple"
		}
		if i%5 == 0 {
			body["client_id"] = fmt.Sprintf("k%d", i)
		}
		if st := users[senders[i%3]].do("POST", "/api/rooms/"+general.ID+"/messages", body, nil); st != http.StatusCreated {
			t.Fatalf("send %d: %d", i, st)
		}
		if i <= 5 {
			if st := users[senders[i%2]].do("POST", "/api/rooms/"+dm.ID+"/messages", map[string]string{"body": "dm pineapple " + fmt.Sprint(i)}, nil); st != http.StatusCreated {
				t.Fatalf("dm %d: %d", i, st)
			}
		}
	}
	for _, seq := range []int{3, 30, 121, 140} { // seq%3 is the sender
		if st := users[senders[seq%3]].do("PATCH", fmt.Sprintf("/api/rooms/%s/messages/%d", general.ID, seq), map[string]string{"body": "edited pineapple"}, nil); st != http.StatusOK {
			t.Fatalf("edit %d: %d", seq, st)
		}
	}
	for _, seq := range []int{4, 125, 130} {
		if st := alice.do("DELETE", fmt.Sprintf("/api/rooms/%s/messages/%d", general.ID, seq), nil, nil); st != http.StatusNoContent {
			t.Fatalf("delete %d: %d", seq, st)
		}
	}
	for n, seq := range map[string]int{"alice": 150, "bob": 100, "carol": 7} {
		if st := users[n].do("PUT", "/api/rooms/"+general.ID+"/read", map[string]int{"seq": seq}, nil); st != http.StatusNoContent {
			t.Fatalf("read %s: %d", n, st)
		}
	}
	rooms := []string{general.ID, dm.ID}
	delete(users, "dave") // banned: the same 403s on both nodes, nothing more to compare
	before := snapshot(t, p.addr, users, rooms)

	// While the node runs, the port is refused, and the target untouched.
	_, stderr, code := portProcess(t, "--from", dir, "--to", env.store)
	if code == 0 || !strings.Contains(stderr, "a node is running on it") {
		t.Errorf("port of a live node: exit %d, %q; want a refusal naming the running node", code, stderr)
	}
	if n := pgInt(t, env.store, `SELECT count(*) FROM pg_tables WHERE schemaname = current_schema()`); n != 0 {
		t.Errorf("the refused port made %d tables", n)
	}

	p.cmd.Process.Signal(syscall.SIGTERM)
	<-p.done
	p.cmd.Wait()
	stdout, stderr, code := portProcess(t, "--from", dir, "--to", env.store, "--batch", "40")
	if code != 0 || !strings.Contains(stdout, "ported ") || !strings.Contains(stdout, "all the same") {
		t.Fatalf("parley port: exit %d\n%s\n%s", code, stdout, stderr)
	}

	node := startServeProcess(t, "--data", t.TempDir(), "--rest-send-rate", "0", "--store", env.store,
		"--broker", env.broker, "--redis", env.redis, "--redis-prefix", env.prefix, "--node-id", "ported-"+filepath.Base(dir))
	after := snapshot(t, node.addr, users, rooms)
	for k, want := range before {
		if got := after[k]; got != want {
			t.Errorf("%s differs after the port:\nsqlite   %.400s\npostgres %.400s", k, want, got)
		}
	}
	if len(after) != len(before) || len(before) < 50 {
		t.Errorf("%d pages after, %d before", len(after), len(before))
	}

	// The password hashes came across: a new login works; and the
	// counters go on where the old node left them.
	c := newClient(t, node.addr)
	if st := c.do("POST", "/api/tokens", map[string]string{"name": "carol", "password": "correct horse"}, nil); st != http.StatusCreated {
		t.Errorf("login on the ported node: %d", st)
	}
	alice.base = "http://" + node.addr
	var m message
	if st := alice.do("POST", "/api/rooms/"+general.ID+"/messages", map[string]string{"body": "after the port"}, &m); st != http.StatusCreated || m.Seq != 151 {
		t.Errorf("send on the ported node: %d seq %d, want 201 seq 151", st, m.Seq)
	}
	var changed struct {
		Messages []struct {
			Change int64 `json:"change"`
		} `json:"messages"`
	}
	if st := alice.do("PATCH", "/api/rooms/"+general.ID+"/messages/151", map[string]string{"body": "edited after"}, nil); st != http.StatusOK {
		t.Errorf("edit on the ported node: %d", st)
	}
	if st := alice.do("GET", "/api/rooms/"+general.ID+"/messages?changed_after=7", nil, &changed); st != http.StatusOK || len(changed.Messages) != 1 || changed.Messages[0].Change != 8 {
		t.Errorf("changes after 7 on the ported node: %d %+v; want change 8 (7 before the port)", st, changed)
	}
}

// portSource makes a stopped node's data directory with n messages in
// 10 rooms of one user, some edited or deleted, written by SQL.
func portSource(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	if _, _, err := runCLI("migrate", "--data", dir); err != nil {
		t.Fatal(err)
	}
	const t0 = 1767225600000000
	execDB(t, sqliteFile(dir),
		fmt.Sprintf(`INSERT INTO users VALUES ('u1', 'una', x'01', %d)`, t0),
		fmt.Sprintf(`WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM r WHERE i < 9)
			INSERT INTO rooms (id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, direct_key, last_change, num)
			SELECT 'r' || i, 'group', 'Room ' || i, 0, 1, %d, %d, %d, NULL, 0, i + 1 FROM r`, n/10, t0, t0),
		`INSERT INTO members (room_id, user_id, read_seq, joined_at, role) SELECT id, 'u1', 0, created_at, 'owner' FROM rooms`,
		fmt.Sprintf(`WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < %d)
			INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change)
			SELECT r.id, s.i, r.id || '-' || s.i, 'u1', 'una', CASE WHEN s.i %% 9 = 0 THEN '' ELSE 'words ' || s.i END, '',
				%d + s.i, CASE WHEN s.i %% 7 = 0 AND s.i %% 9 <> 0 THEN %d + s.i + 1 END, CASE WHEN s.i %% 9 = 0 THEN %d + s.i + 2 END, 0
			FROM rooms r, s`, n/10, t0, t0, t0),
		`INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')`)
	return dir
}

var progressMessagesRE = regexp.MustCompile(`^port messages `)

// TestPortResumesAfterKill: a port stopped after some batches (--stop-after),
// and one killed with SIGKILL while it copies the messages, each run
// again, finish with every row once and the checksums equal.
func TestPortResumesAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("runs port processes")
	}
	const n = 20000
	target := pgtest.Schema(t)
	dir := portSource(t, n)

	// Stopped after 5 batches of 100: some messages are in, not all.
	_, stderr, code := portProcess(t, "--from", dir, "--to", target, "--batch", "100", "--stop-after", "5")
	if code == 0 || !strings.Contains(stderr, "stopped after") {
		t.Fatalf("port --stop-after 5: exit %d, %s", code, stderr)
	}
	if got := pgInt(t, target, `SELECT count(*) FROM messages`); got == 0 || got >= n {
		t.Fatalf("after the stop: %d messages, want some of %d", got, n)
	}

	// Killed while it copies the messages.
	cmd := exec.Command(os.Args[0], "port", "--from", dir, "--to", target, "--batch", "100", "--writers", "1", "--progress", "on")
	cmd.Env = append(os.Environ(), "PARLEY_TEST_EXEC_CLI=1")
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(errPipe)
	var seen []string
	for sc.Scan() {
		seen = append(seen, sc.Text())
		if progressMessagesRE.MatchString(sc.Text()) {
			cmd.Process.Kill()
			break
		}
	}
	cmd.Wait()
	if got := pgInt(t, target, `SELECT count(*) FROM parley_port WHERE finished_at IS NULL`); got != 1 {
		t.Fatalf("the killed port finished anyway (%d unfinished); it printed %q", got, seen)
	}
	killedAt := pgInt(t, target, `SELECT count(*) FROM messages`)

	stdout, stderr, code := portProcess(t, "--from", dir, "--to", target)
	if code != 0 || !strings.Contains(stdout, "(resumed)") || !strings.Contains(stdout, "all the same") {
		t.Fatalf("port after the kill: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := pgInt(t, target, `SELECT count(*) FROM messages`); got != n {
		t.Errorf("after the resume: %d messages, want %d", got, n)
	}
	if got := pgInt(t, target, `SELECT count(*) FROM (SELECT DISTINCT room_id, seq FROM messages) x`); got != n {
		t.Errorf("after the resume: %d distinct messages, want %d", got, n)
	}
	t.Logf("killed with %d of %d messages copied", killedAt, n)

	// Once finished, a run only verifies, and so does --verify-only.
	for _, args := range [][]string{{}, {"--verify-only"}} {
		stdout, stderr, code = portProcess(t, append([]string{"--from", dir, "--to", target}, args...)...)
		if code != 0 || !strings.Contains(stdout, "all the same") {
			t.Errorf("port %v on the finished port: exit %d\n%s\n%s", args, code, stdout, stderr)
		}
	}
	// A difference fails loudly, naming the room.
	pgtest.Exec(t, target, `UPDATE messages SET body = 'tampered' WHERE room_id = 'r3' AND seq = 17`)
	stdout, stderr, code = portProcess(t, "--from", dir, "--to", target, "--verify-only")
	if code == 0 || !strings.Contains(stdout+stderr, "1 DIFFER: r3") {
		t.Errorf("verify of a tampered target: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// TestPortRefuses: bad input gets a clear error and changes nothing.
func TestPortRefuses(t *testing.T) {
	pgtest.URL(t) // skips without PostgreSQL
	src := portSource(t, 100)
	notParley := t.TempDir()
	garbage := t.TempDir()
	if err := os.WriteFile(filepath.Join(garbage, "parley.db"), []byte("not a database at all, not even close"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		from  string
		setup func(t *testing.T, url string)
		want  string
	}{
		{"missing directory", filepath.Join(notParley, "nope"), nil, "no such directory"},
		{"not a data directory", notParley, nil, "not a Parley data directory"},
		{"not a database", garbage, nil, "not a SQLite database"},
		{"a target with someone else's table", src, func(t *testing.T, url string) {
			pgtest.Exec(t, url, "CREATE TABLE invoices (id int)")
		}, "holds other data"},
		{"a target with a Parley database in use", src, func(t *testing.T, url string) {
			if _, _, err := runCLI("migrate", "--store", url); err != nil {
				t.Fatal(err)
			}
			pgtest.Exec(t, url, `INSERT INTO users VALUES ('u-x', 'x', '', now())`)
		}, "holds other data"},
		{"a target of a newer schema", src, func(t *testing.T, url string) {
			if _, _, err := runCLI("migrate", "--store", url); err != nil {
				t.Fatal(err)
			}
			pgtest.Exec(t, url, `INSERT INTO schema_migrations (version, name) VALUES (999, '0999_future.sql')`)
		}, "newer than this program"},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := pgtest.Schema(t)
			if c.setup != nil {
				c.setup(t, target)
			}
			before := tablesOf(t, target)
			srcBefore := dirState(t, c.from)
			_, stderr, err := runCLI("port", "--from", c.from, "--to", target)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("parley port = %v (%s), want an error saying %q", err, stderr, c.want)
			}
			if after := tablesOf(t, target); after != before {
				t.Errorf("the refused port changed the target: %s, was %s", after, before)
			}
			if st := dirState(t, c.from); c.from != src && !equalState(st, srcBefore) {
				t.Errorf("the refused port changed %s", c.from)
			}
		})
	}
}

// tablesOf lists the target's tables and their row counts.
func tablesOf(t *testing.T, url string) string {
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
		fmt.Fprintf(&b, "%s=%d ", n, pgInt(t, url, "SELECT count(*) FROM "+n))
	}
	return b.String()
}

// TestPortHelp: parley -h names port, and port -h its flags.
func TestPortHelp(t *testing.T) {
	out, _, err := runCLI("-h")
	if err != nil || !strings.Contains(out, "port ") {
		t.Errorf("parley -h = %v, %q; want port listed", err, out)
	}
	_, errs, err := runCLI("port", "-h")
	if exitCode(err) != 0 || !strings.Contains(errs, "--from") || !strings.Contains(errs, "PARLEY_TO") || !strings.Contains(errs, "--verify-only") {
		t.Errorf("parley port -h = %v, %q", err, errs)
	}
}
