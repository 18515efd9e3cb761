package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"parley"
)

// stopServe ends a server process with SIGTERM (a clean shutdown) and
// waits for it.
func stopServe(t *testing.T, p *serveProcess) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-p.done
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("parley serve after SIGTERM: %v\n%s", err, p.lines())
	}
}

// restPages is what each client sees of the server: its room list, and
// for each room its history (both directions), members, changes and
// search, as the raw JSON of each answer.
func restPages(t *testing.T, cs map[string]*client, rooms []string) map[string]string {
	t.Helper()
	pages := map[string]string{}
	get := func(who string, c *client, path string) {
		var raw json.RawMessage
		if st := c.do("GET", path, nil, &raw); st != http.StatusOK {
			t.Fatalf("%s: GET %s: %d", who, path, st)
		}
		pages[who+" "+path] = string(raw)
	}
	for who, c := range cs {
		get(who, c, "/api/me/rooms?limit=50")
		get(who, c, "/api/me/search?q=pineapple&limit=50")
		for _, id := range rooms {
			if st := c.do("GET", "/api/rooms/"+id+"/members", nil, nil); st != http.StatusOK {
				continue // not a member
			}
			for _, q := range []string{"limit=5", "after=0&limit=100", "before=6&limit=3", "changed_after=0", "q=pineapple"} {
				get(who, c, "/api/rooms/"+id+"/messages?"+q)
			}
			get(who, c, "/api/rooms/"+id+"/members")
		}
	}
	return pages
}

// records returns an export's lines but the header.
func records(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), "\n")
	return rest
}

// fillOverREST fills the server at addr over REST: four accounts, a
// group room with an edit, a deletion, a ban and a read position, and a
// direct room. It returns the clients and ids by name, the group room
// and both rooms' ids.
func fillOverREST(t *testing.T, addr string) (map[string]*client, map[string]string, room, []string) {
	t.Helper()
	cs := map[string]*client{}
	ids := map[string]string{}
	for _, name := range []string{"alice", "bob", "carol", "dave"} {
		c, u := mustSignUp(t, addr, name)
		cs[name], ids[name] = c, u.ID
	}
	var g, d room
	if st := cs["alice"].do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "General", "capacity": 10}, &g); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	for _, name := range []string{"bob", "carol", "dave"} {
		if st := cs[name].do("POST", "/api/rooms/"+g.ID+"/members", nil, nil); st != http.StatusCreated {
			t.Fatalf("%s joins: %d", name, st)
		}
	}
	for i := range 30 {
		name := []string{"alice", "bob", "carol"}[i%3]
		body := fmt.Sprintf("message %d from %s", i, name)
		if i%7 == 0 {
			body += " about pineapple"
		}
		if i == 20 {
			body += ", @bob" // an unread mention of bob's (he reads up to 12)
		}
		if st := cs[name].do("POST", "/api/rooms/"+g.ID+"/messages", map[string]string{"body": body, "client_id": fmt.Sprintf("k%d", i)}, nil); st != http.StatusCreated {
			t.Fatalf("send: %d", st)
		}
	}
	if st := cs["alice"].do("PATCH", "/api/rooms/"+g.ID+"/messages/1", map[string]string{"body": "pineapple, edited"}, nil); st != http.StatusOK {
		t.Fatalf("edit: %d", st)
	}
	if st := cs["alice"].do("DELETE", "/api/rooms/"+g.ID+"/messages/8", nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
	if st := cs["alice"].do("DELETE", "/api/rooms/"+g.ID+"/members/"+ids["dave"]+"?ban=true", nil, nil); st != http.StatusNoContent {
		t.Fatalf("ban: %d", st)
	}
	if st := cs["bob"].do("PUT", "/api/rooms/"+g.ID+"/read", map[string]int{"seq": 12}, nil); st != http.StatusNoContent {
		t.Fatalf("read: %d", st)
	}
	for name, level := range map[string]string{"bob": "mentions", "carol": "none"} {
		if st := cs[name].do("PUT", "/api/rooms/"+g.ID+"/notifications", map[string]string{"level": level}, nil); st != http.StatusOK {
			t.Fatalf("%s's level: %d", name, st)
		}
	}
	if st := cs["carol"].do("POST", "/api/rooms", map[string]string{"kind": "direct", "peer": ids["bob"]}, &d); st != http.StatusCreated {
		t.Fatalf("direct room: %d", st)
	}
	if st := cs["carol"].do("POST", "/api/rooms/"+d.ID+"/messages", map[string]string{"body": "a pineapple for two"}, nil); st != http.StatusCreated {
		t.Fatalf("send: %d", st)
	}
	return cs, ids, g, []string{g.ID, d.ID}
}

// TestExportImportEndToEnd: a `parley serve` filled over REST is
// exported (while it runs, then stopped), imported into a new data
// directory, and served again: every REST page (room lists with their
// mention counts and levels, history with its mentions, changes, members,
// search) is the same, the same tokens work, and the
// import of the same file again writes nothing.
func TestExportImportEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dir, work := t.TempDir(), t.TempDir()
	p := startServeProcess(t, "--data", dir, "--sync", "normal", "--signup-rate", "0")
	cs, _, g, rooms := fillOverREST(t, p.addr)
	want := restPages(t, cs, rooms)

	// Beside the running server, then stopped: the same records.
	live := filepath.Join(work, "live.jsonl")
	if _, _, err := runCLI("export", "--data", dir, "--with-secrets", "-o", live); err != nil {
		t.Fatalf("export of the running server: %v", err)
	}
	stopServe(t, p)
	file := filepath.Join(work, "server.jsonl")
	if _, errs, err := runCLI("export", "--data", dir, "--with-secrets", "-o", file); err != nil || !strings.Contains(errs, "31 messages") {
		t.Fatalf("export = %q, %v; want 31 messages", errs, err)
	}
	if records(t, live) != records(t, file) {
		t.Errorf("the export of the running server differs from the stopped one's")
	}

	moved := filepath.Join(work, "moved")
	out, _, err := runCLI("import", "--data", moved, file)
	if err != nil || !strings.Contains(out, "31 messages") {
		t.Fatalf("import = %q, %v", out, err)
	}
	if out, _, err = runCLI("import", "--data", moved, file); err != nil || !strings.Contains(out, "0 users, 0 tokens, 0 API keys, 0 name holds, 0 rooms, 0 members, 0 bans, 0 messages, 0 change keys, 0 files written") {
		t.Errorf("second import = %q, %v; want nothing written", out, err)
	}
	q := startServeProcess(t, "--data", moved, "--sync", "normal", "--signup-rate", "0")
	if _, _, err := runCLI("import", "--data", moved, file); err == nil || !strings.Contains(err.Error(), "stop the server first") {
		t.Errorf("import into a running server's directory = %v, want it refused", err)
	}
	for _, c := range cs {
		c.base = "http://" + q.addr // the same tokens: the export carried their hashes
	}
	got := restPages(t, cs, rooms)
	for k, w := range want {
		if got[k] != w {
			t.Errorf("after the move, %s =\n%s\nwant\n%s", k, got[k], w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("after the move, %d pages, want %d", len(got), len(want))
	}
	// The moved node goes on: a send takes the next seq.
	var m message
	if st := cs["bob"].do("POST", "/api/rooms/"+g.ID+"/messages", map[string]string{"body": "after the move"}, &m); st != http.StatusCreated || m.Seq != 31 {
		t.Errorf("send after the move: %d, seq %d; want 201, seq 31", st, m.Seq)
	}
	stopServe(t, q)

	// Without secrets, the accounts come without their passwords.
	bare := filepath.Join(work, "bare.jsonl")
	if _, _, err := runCLI("export", "--data", dir, "--room", g.ID, "-o", bare); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(work, "fresh")
	if out, _, err = runCLI("import", "--data", fresh, bare); err != nil || !strings.Contains(out, "cannot log in") {
		t.Fatalf("import without secrets = %q, %v; want it to say the accounts cannot log in", out, err)
	}
	r := startServeProcess(t, "--data", fresh, "--sync", "normal")
	c := newClient(t, r.addr)
	if st := c.do("POST", "/api/tokens", map[string]string{"name": "alice", "password": "correct horse"}, nil); st != http.StatusUnauthorized {
		t.Errorf("login of an account imported without its password hash: %d, want 401", st)
	}
}

// TestImportRefusals: a missing, foreign or newer file changes nothing,
// nor does an export of a directory with no database.
func TestImportRefusals(t *testing.T) {
	work := t.TempDir()
	newer := filepath.Join(work, "newer.jsonl")
	os.WriteFile(newer, []byte(`{"format":"parley-export","version":3,"type":"header"}`+"\n"), 0o600)
	foreign := filepath.Join(work, "foreign.jsonl")
	os.WriteFile(foreign, []byte("SQLite format 3\x00 or so\n"), 0o600)
	for _, tc := range []struct{ name, file, want string }{
		{"missing", filepath.Join(work, "none.jsonl"), "no such file"},
		{"foreign", foreign, "not a parley-export file"},
		{"newer", newer, "version 3, this program reads up to 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := filepath.Join(work, "data-"+tc.name)
			_, _, err := runCLI("import", "--data", data, tc.file)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("import = %v, want %q", err, tc.want)
			}
			if _, serr := os.Stat(data); !os.IsNotExist(serr) {
				t.Errorf("the refused import left %s behind", data)
			}
		})
	}
	if _, _, err := runCLI("export", "--data", filepath.Join(work, "empty")); err == nil || !strings.Contains(err.Error(), "no database") {
		t.Errorf("export of no database = %v", err)
	}
	if _, _, err := runCLI("import", "--store", "postgres://127.0.0.1:1/x", newer); err == nil || !strings.Contains(err.Error(), "--redis") {
		t.Errorf("import into PostgreSQL without --redis = %v, want it refused", err)
	}
}

// TestExportImportPostgres: a served SQLite node's export imported into
// PostgreSQL beside a running cluster node (with --redis): the node
// answers the same REST pages to the same tokens, a second import writes
// nothing, and PostgreSQL's export holds the same records.
func TestExportImportPostgres(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	env := needCluster(t)
	dir, work := t.TempDir(), t.TempDir()
	p := startServeProcess(t, "--data", dir, "--sync", "normal", "--signup-rate", "0")
	cs, _, _, rooms := fillOverREST(t, p.addr)
	want := restPages(t, cs, rooms)
	stopServe(t, p)
	file := filepath.Join(work, "server.jsonl")
	if _, _, err := runCLI("export", "--data", dir, "--with-secrets", "-o", file); err != nil {
		t.Fatal(err)
	}

	node := startServeProcess(t, "--data", t.TempDir(), "--store", env.store, "--broker", env.broker, "--redis", env.redis,
		"--redis-prefix", env.prefix, "--node-id", "import-"+parley.NewID()[:6])
	imp := []string{"import", "--store", env.store, "--redis", env.redis, "--redis-prefix", env.prefix, file}
	if out, _, err := runCLI(imp...); err != nil || !strings.Contains(out, "31 messages") {
		t.Fatalf("import into PostgreSQL = %q, %v", out, err)
	}
	for _, c := range cs {
		c.base = "http://" + node.addr
	}
	got := restPages(t, cs, rooms)
	for k, w := range want {
		if got[k] != w {
			t.Errorf("on the cluster node, %s =\n%s\nwant\n%s", k, got[k], w)
		}
	}
	if out, _, err := runCLI(imp...); err != nil || !strings.Contains(out, " 0 messages") {
		t.Errorf("second import = %q, %v; want nothing written", out, err)
	}
	back := filepath.Join(work, "back.jsonl")
	if _, _, err := runCLI("export", "--store", env.store, "--with-secrets", "-o", back); err != nil {
		t.Fatal(err)
	}
	if records(t, back) != records(t, file) {
		t.Errorf("PostgreSQL's export differs from the file imported")
	}
}
