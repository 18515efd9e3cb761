package sqlite

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"parley"
	"parley/schema"
)

// TestMigrateSearchTerms: a database from before 0005 (the index of 0003:
// a word's postings over every room) gets the index of room terms, filled
// from its messages but the tombstones, in the transaction of the
// migration; the old table and its view are gone.
func TestMigrateSearchTerms(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "parley.db")
	cfg := Config{Path: path}
	cfg.defaults()
	db := openDB(path, 1, true, cfg)
	if err := walMode(ctx, db); err != nil {
		t.Fatal(err)
	}
	ms, err := schema.Load(migrations, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.Version >= 5 {
			break
		}
		if _, err := applyMigration(ctx, db, m); err != nil {
			t.Fatal(err)
		}
	}
	for _, stmt := range []string{
		`INSERT INTO users VALUES ('a', 'alice', x'00', 1), ('b', 'bob', x'00', 2)`,
		`INSERT INTO rooms (id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, direct_key, num)
			VALUES ('r1', 'group', 'one', 0, 1, 3, 100, 100, NULL, 1), ('r12', 'group', 'twelve', 0, 1, 1, 200, 200, NULL, 12),
			('rb', 'group', 'bobs', 0, 1, 1, 300, 300, NULL, 2)`,
		`INSERT INTO members (room_id, user_id, read_seq, joined_at) VALUES ('r1', 'a', 0, 100), ('r12', 'a', 0, 200), ('rb', 'b', 0, 300)`,
		`INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, sent_at, edited_at, deleted_at, change) VALUES
			('r1', 1, 'm1', 'a', 'alice', 'Hello, World', 101, NULL, NULL, 0),
			('r1', 2, 'm2', 'a', 'alice', '', 102, NULL, 110, 1),
			('r1', 3, 'm3', 'a', 'alice', 'hello again, edited', 103, 111, NULL, 2),
			('r12', 1, 'm4', 'a', 'alice', 'hello abc', 201, NULL, NULL, 0),
			('rb', 1, 'm5', 'b', 'bob', 'hello from bob', 301, NULL, NULL, 0)`,
		`INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()

	s, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatalf("Open() (migrating) error = %v", err)
	}
	defer s.Close()
	search := func(user, q string) []string {
		t.Helper()
		query, err := parley.ParseQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		hits, _, err := s.Search(ctx, user, query, "", 50)
		if err != nil {
			t.Fatalf("Search(%s, %q) error = %v", user, q, err)
		}
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.Message.ID)
		}
		return ids
	}
	for _, tt := range []struct {
		user, q string
		want    []string
	}{
		{"a", "hello", []string{"m4", "m3", "m1"}},
		{"a", "world", []string{"m1"}},
		{"a", "edited", []string{"m3"}},
		{"a", "abc1", nil},
		{"a", "bob", nil},
		{"b", "hello", []string{"m5"}},
	} {
		if got := search(tt.user, tt.q); !slices.Equal(got, tt.want) {
			t.Errorf("Search(%s, %q) after the migration = %v, want %v", tt.user, tt.q, got, tt.want)
		}
	}
	q, _ := parley.ParseQuery("hello")
	msgs, err := s.SearchRoom(ctx, "r1", q, 0, 10)
	if err != nil || len(msgs) != 2 || msgs[0].Seq != 3 || msgs[1].Seq != 1 {
		t.Errorf("SearchRoom(r1, hello) = %v, %v; want seqs 3, 1", msgs, err)
	}
	// The migrated index keeps working: an edit of a migrated message
	// forgets its migrated terms.
	if _, err := s.EditMessage(ctx, parley.Edit{RoomID: "r1", Seq: 1, EditorID: "a", Body: "goodbye"}); err != nil {
		t.Fatal(err)
	}
	if got := search("a", "world"); len(got) != 0 {
		t.Errorf("Search(a, world) after editing it away = %v, want none", got)
	}
	var n int
	if err := s.rdb.QueryRow(`SELECT count(*) FROM sqlite_master WHERE name IN ('messages_fts', 'messages_text')`).Scan(&n); err != nil || n != 0 {
		t.Errorf("the index of 0003 left %d tables or views, %v; want none", n, err)
	}
}
