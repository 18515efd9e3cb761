package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"parley"
)

// TestMigrateMessageKeys: a database of version 4, with messages that
// have client ids, an edit, a deletion and keyed changes, migrates to 0005
// (the table rebuilt without the unique id and its foreign keys) with
// every row, index and full-text entry kept: the old messages read back
// with their ids, a resent client id returns its old message, a repeated
// change applies nothing, search finds what it found, and new messages
// get derived ids that no old one has.
func TestMigrateMessageKeys(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "parley.db")
	db := dbAtVersion(t, path, 4)
	// Ids as the store made them before 0005: 26 base32 characters.
	id := func(n int) string { return fmt.Sprintf("aaaaaaaaaaaaaaaaaaaaaaa%03d", n) }
	for _, stmt := range []string{
		`INSERT INTO users VALUES ('a', 'alice', x'00', 1), ('b', 'bob', x'00', 2)`,
		`INSERT INTO rooms (id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, direct_key, last_change, num)
			VALUES ('r1', 'group', 'one', 0, 2, 4, 400, 100, NULL, 2, 1), ('r2', 'group', 'two', 0, 2, 1, 500, 200, NULL, 0, 2)`,
		`INSERT INTO members VALUES ('r1', 'a', 4, 100, 'owner'), ('r1', 'b', 4, 150, 'member'),
			('r2', 'a', 1, 200, 'owner'), ('r2', 'b', 0, 250, 'member')`,
		`INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change) VALUES
			('r1', 1, '` + id(1) + `', 'a', 'alice', 'hello world', 'c1', 300, NULL, NULL, 0),
			('r1', 2, '` + id(2) + `', 'b', 'bob', 'plain words', '', 310, NULL, NULL, 0),
			('r1', 3, '` + id(3) + `', 'a', 'alice', 'edited text', 'c3', 320, 390, NULL, 1),
			('r1', 4, '` + id(4) + `', 'b', 'bob', '', 'c4', 330, NULL, 395, 2),
			('r2', 1, '` + id(5) + `', 'a', 'alice', 'hello again', 'c1', 500, NULL, NULL, 0)`,
		`INSERT INTO change_keys VALUES ('r1', 'a', 'e1', 3, 0, 1), ('r1', 'b', 'd1', 4, 1, 2)`,
		`INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	before := dumpMessages(t, db)
	db.Close()

	s, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatalf("Open() (migrating) error = %v", err)
	}
	defer s.Close()
	if got := dumpMessages(t, s.rdb); !reflect.DeepEqual(got, before) {
		t.Errorf("messages after 0005 =\n%v\nwant\n%v", got, before)
	}
	var v int
	if err := s.rdb.QueryRow(`SELECT max(version) FROM schema_migrations`).Scan(&v); err != nil || v < 5 {
		t.Fatalf("schema version = %d, %v; want 0005 applied", v, err)
	}

	// Reads: every old message, with its id, in order; the changes.
	page, err := s.Messages(ctx, "r1", parley.Page{After: 0, Limit: 10})
	if err != nil || len(page) != 4 {
		t.Fatalf("Messages(r1) = %d, %v; want 4", len(page), err)
	}
	for i, m := range page {
		if m.ID != id(i+1) || m.Seq != int64(i+1) {
			t.Errorf("message %d = %s seq %d, want %s seq %d", i, m.ID, m.Seq, id(i+1), i+1)
		}
	}
	if !page[3].Deleted() || page[2].EditedAt == nil || page[2].Body != "edited text" {
		t.Errorf("changed messages = %+v, %+v; want an edit and a tombstone", page[2], page[3])
	}
	if ch, err := s.Changed(ctx, "r1", 0, 10); err != nil || len(ch) != 2 || ch[0].Seq != 3 || ch[1].Seq != 4 {
		t.Errorf("Changed(r1, 0) = %v, %v; want seqs 3 and 4", ch, err)
	}

	// Idempotency: each stored client id returns its message.
	for _, tt := range []struct {
		room, sender, client string
		want                 int
	}{{"r1", "a", "c1", 1}, {"r1", "a", "c3", 3}, {"r1", "b", "c4", 4}, {"r2", "a", "c1", 5}} {
		m, created, err := s.Send(ctx, parley.NewMessage{RoomID: tt.room, SenderID: tt.sender, Body: "again", ClientID: tt.client})
		if err != nil || created || m.ID != id(tt.want) {
			t.Errorf("Send(%s, %s, %s) = %s created %v, %v; want the stored %s", tt.room, tt.sender, tt.client, m.ID, created, err, id(tt.want))
		}
	}
	if r, err := s.Room(ctx, "r1"); err != nil || r.LastSeq != 4 || r.LastChange != 2 {
		t.Fatalf("Room(r1) = %+v, %v; want last_seq 4, last_change 2: nothing new", r, err)
	}
	if m, err := s.EditMessage(ctx, parley.Edit{RoomID: "r1", Seq: 3, EditorID: "a", Body: "edited text", ClientID: "e1"}); err != nil || m.Change != 1 {
		t.Errorf("repeated edit = %+v, %v; want the stored change 1", m, err)
	}
	if m, _, err := s.DeleteMessage(ctx, parley.Deletion{RoomID: "r1", Seq: 4, ActorID: "b", ClientID: "d1"}); err != nil || m.Change != 2 {
		t.Errorf("repeated deletion = %+v, %v; want the stored change 2", m, err)
	}

	// Search: the index is the one 0003 built.
	search := func(room, words string) []int64 {
		t.Helper()
		q, err := parley.ParseQuery(words)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.WaitIndexed(ctx); err != nil {
			t.Fatal(err)
		}
		ms, err := s.SearchRoom(ctx, room, q, 0, 10)
		if err != nil {
			t.Fatalf("SearchRoom(%s, %q) error = %v", room, words, err)
		}
		var seqs []int64
		for _, m := range ms {
			seqs = append(seqs, m.Seq)
		}
		return seqs
	}
	for _, tt := range []struct {
		room, words string
		want        []int64
	}{{"r1", "hello", []int64{1}}, {"r2", "hello", []int64{1}}, {"r1", "edited", []int64{3}}, {"r1", "plain", []int64{2}}} {
		if got := search(tt.room, tt.words); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("SearchRoom(%s, %q) = %v, want %v", tt.room, tt.words, got, tt.want)
		}
	}

	// New messages: seqs go on, ids derived, new client ids keyed, an edit
	// of an old message reindexed.
	m, created, err := s.Send(ctx, parley.NewMessage{RoomID: "r1", SenderID: "a", Body: "hello new", ClientID: "c9"})
	if err != nil || !created || m.Seq != 5 || m.ID != messageID(1, 5) || len(m.ID) == len(id(1)) {
		t.Fatalf("new Send = %+v created %v, %v; want seq 5, id %s", m, created, err, messageID(1, 5))
	}
	if again, created, err := s.Send(ctx, parley.NewMessage{RoomID: "r1", SenderID: "a", Body: "hello new", ClientID: "c9"}); err != nil || created || again.ID != m.ID {
		t.Errorf("resent new Send = %s created %v, %v; want %s again", again.ID, created, err, m.ID)
	}
	if _, err := s.EditMessage(ctx, parley.Edit{RoomID: "r1", Seq: 1, EditorID: "a", Body: "goodbye world"}); err != nil {
		t.Fatalf("EditMessage(old) error = %v", err)
	}
	if got, want := search("r1", "hello"), []int64{5}; !reflect.DeepEqual(got, want) {
		t.Errorf("SearchRoom(r1, hello) after the edit = %v, want %v", got, want)
	}
	if got, want := search("r1", "goodbye"), []int64{1}; !reflect.DeepEqual(got, want) {
		t.Errorf("SearchRoom(r1, goodbye) = %v, want %v", got, want)
	}
	s.Close()

	// FTS5's own check: the index holds exactly the content's words.
	cfg := Config{Path: path}
	cfg.defaults()
	db = openDB(path, 1, true, cfg)
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
		t.Errorf("full-text integrity check: %v", err)
	}
	// The indexes of messages: the client ids', unique, the changes', and
	// the retention sweeper's live messages by send time (0008).
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'messages' AND sql IS NOT NULL ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	if want := []string{"messages_change", "messages_client", "messages_mentions", "messages_pins", "messages_thread"}; !reflect.DeepEqual(names, want) { // messages_thread: a thread's replies (0012); messages_pins: a room's pins (0014); messages_mentions: unread mentions (0015)
		t.Errorf("indexes of messages = %v, want %v", names, want)
	}
	_, err = db.Exec(`INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at)
		VALUES ('r1', 99, 'x', 'a', 'alice', 'a second c1', 'c1', 900)`)
	if !isConstraint(err) {
		t.Errorf("a second message keyed (r1, a, c1): %v, want a constraint error", err)
	}
}

// dumpMessages returns every column of every message, in key order.
func dumpMessages(t *testing.T, db *sql.DB) [][]any {
	t.Helper()
	rows, err := db.Query(`SELECT room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change
		FROM messages ORDER BY room_id, seq`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var all [][]any
	for rows.Next() {
		row := make([]any, 11)
		ptrs := make([]any, len(row))
		for i := range row {
			ptrs[i] = &row[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		for i, v := range row {
			if b, ok := v.([]byte); ok {
				row[i] = string(b)
			}
		}
		all = append(all, row)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}

// TestClientLookupPlan: the grouped lookup of client ids seeks
// messages_client for each key rather than scanning messages.
func TestClientLookupPlan(t *testing.T) {
	s, err := Open(context.Background(), Config{Path: filepath.Join(t.TempDir(), "parley.db")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for i, n := range chunkSizes {
		args := make([]any, 3*n)
		for j := range args {
			args[j] = "x"
		}
		rows, err := s.rdb.Query(`EXPLAIN QUERY PLAN `+s.wq.clientMessages[i].text, args...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		if got := strings.Join(plan, "; "); !strings.Contains(got, "SEARCH m USING INDEX messages_client (room_id=? AND sender_id=? AND client_id=?)") {
			t.Errorf("plan of the lookup of %d keys = %s; want a search of messages_client", n, got)
		}
	}
}
