package sqlite

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
)

// TestDeletedTextLeavesFiles: the text of a deleted message, and the old
// text of an edited one, leave parley.db, its WAL and its shm within
// EraseBound, and stay gone after Close.
func TestDeletedTextLeavesFiles(t *testing.T) {
	tests := []struct {
		name   string
		change func(s *Store, m parley.Message) error
	}{
		{"delete", func(s *Store, m parley.Message) error {
			_, _, err := s.DeleteMessage(context.Background(), parley.Deletion{RoomID: m.RoomID, Seq: m.Seq, ActorID: m.SenderID})
			return err
		}},
		{"edit", func(s *Store, m parley.Message) error {
			_, err := s.EditMessage(context.Background(), parley.Edit{RoomID: m.RoomID, Seq: m.Seq, EditorID: m.SenderID, Body: "second draft"})
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "parley.db")
			s, err := Open(context.Background(), Config{Path: path, Sync: SyncNormal})
			if err != nil {
				t.Fatalf("Open() error = %v", err)
			}
			defer s.Close()
			u := parleytest.MustCreateUser(t, s, "keeper")
			room := parleytest.MustCreateRoom(t, s, u, "r", 0)
			for i := range 200 {
				parleytest.MustSend(t, s, room, u, fmt.Sprintf("filler %d with some ordinary words", i))
			}
			word := parleytest.RandomWord(t)
			m := parleytest.MustSend(t, s, room, u, "please forget "+word+" soon")
			// As in a database that has lived a while, the word is in a
			// big segment of the full-text index, which later merges of
			// small ones leave alone (without secure-delete, a deletion
			// only adds a marker to a new small one).
			mustOptimizeIndex(t, path)
			for i := range 5 {
				parleytest.MustSend(t, s, room, u, fmt.Sprintf("more filler %d", i))
			}
			// The text is in the database file too (a PASSIVE checkpoint
			// copied it), not only in the WAL, before the change.
			parleytest.Eventually(t, 10*time.Second, func() bool { return len(parleytest.FilesHolding(path, []string{""}, word)) == 1 },
				"the message never reached the database file: %v", parleytest.FilesHolding(path, parleytest.SQLiteFiles, word))

			if err := tc.change(s, m); err != nil {
				t.Fatalf("%s: %v", tc.name, err)
			}
			start := time.Now()
			if !parleytest.Poll(10*time.Second, func() bool { return len(parleytest.FilesHolding(path, parleytest.SQLiteFiles, word)) == 0 }) {
				t.Errorf("10 s after the %s, the old text is still in %v", tc.name, parleytest.FilesHolding(path, parleytest.SQLiteFiles, word))
			} else {
				t.Logf("old text gone from the files %v after the %s (bound %v)", time.Since(start), tc.name, EraseBound)
			}
			if err := s.Close(); err != nil {
				t.Fatalf("Close() error = %v", err)
			}
			if in := parleytest.FilesHolding(path, parleytest.SQLiteFiles, word); len(in) > 0 {
				t.Errorf("after Close, the old text is in %v", in)
			}
		})
	}
}

// mustOptimizeIndex merges the full-text index of the database at path
// into one segment, on a connection of its own.
func mustOptimizeIndex(t testing.TB, path string) {
	t.Helper()
	cfg := Config{Path: path}
	cfg.defaults()
	db := openDB(path, 1, true, cfg)
	defer db.Close()
	if _, err := db.Exec(`INSERT INTO messages_fts (messages_fts) VALUES ('optimize')`); err != nil {
		t.Fatalf("optimize the index: %v", err)
	}
}

// suffixes are the files of a database: itself, its WAL and its shm.
// TestSecureDeletePerConnection: secure_delete is a setting of each
// connection, not of the file: the writer's connections have it, and a
// connection opened without it does not.
func TestSecureDeletePerConnection(t *testing.T) {
	path := filepath.Join(t.TempDir(), "parley.db")
	s, err := Open(context.Background(), Config{Path: path})
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	defer s.Close()
	var w, r int
	if err := s.wdb.QueryRow(`PRAGMA secure_delete`).Scan(&w); err != nil || w != 1 {
		t.Errorf("writer: secure_delete = %d, %v; want 1", w, err)
	}
	if err := s.rdb.QueryRow(`PRAGMA secure_delete`).Scan(&r); err != nil || r != 0 {
		t.Errorf("reader: secure_delete = %d, %v; want 0 (a setting of the connection)", r, err)
	}
}

// TestEraseWaitsForReaders: a reader that holds a snapshot of the WAL
// holds up the TRUNCATE checkpoint of a deletion; the checkpointer tries
// again, and the text leaves the WAL once the reader is done.
func TestEraseWaitsForReaders(t *testing.T) {
	defer func(every, erase time.Duration) { checkpointEvery, eraseEvery = every, erase }(checkpointEvery, eraseEvery)
	checkpointEvery, eraseEvery = 5*time.Millisecond, 20*time.Millisecond
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "parley.db")
	s, u, room := openErased(t, path, Config{Sync: SyncNormal})
	defer s.Close()
	word := parleytest.RandomWord(t)
	m := parleytest.MustSend(t, s, room, u, "please forget "+word)
	parleytest.MustSend(t, s, room, u, "and keep this")

	// A snapshot taken now reads the WAL's frames of the message.
	release := holdSnapshot(t, s)
	if _, _, err := s.DeleteMessage(ctx, parley.Deletion{RoomID: room.ID, Seq: m.Seq, ActorID: u.ID}); err != nil {
		t.Fatalf("DeleteMessage() error = %v", err)
	}
	parleytest.Eventually(t, 10*time.Second, func() bool { return s.ck.deferred.Load() >= 2 },
		"the reader did not put off the TRUNCATE checkpoint twice")
	if held := s.ck.erasesHeld.Load(); held != 0 {
		t.Errorf("%d TRUNCATE checkpoints waited for the reader under the writer's lock, want none", held)
	}
	if in := parleytest.FilesHolding(path, parleytest.SQLiteFiles, word); len(in) == 0 {
		t.Errorf("the text left the files while a reader held the WAL: the test shows nothing")
	}
	release()
	parleytest.Eventually(t, 10*time.Second, func() bool { return s.ck.erases.Load() == 2 },
		"after the reader ended, no TRUNCATE checkpoint emptied the WAL")
	if in := parleytest.FilesHolding(path, parleytest.SQLiteFiles, word); len(in) > 0 {
		t.Errorf("after the reader ended and the WAL was emptied, the text is in %v", in)
	}
}

// TestEraseAfterCrash: text a deletion erased but whose TRUNCATE
// checkpoint had not run yet when the process died is in the WAL SQLite
// recovers at the next Open; it leaves the files within EraseBound of that
// Open.
func TestEraseAfterCrash(t *testing.T) {
	defer func(erase time.Duration) { eraseEvery = erase }(eraseEvery)
	eraseEvery = time.Hour // the deletion's checkpoint never comes
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "parley.db")
	s, u, room := openErased(t, path, Config{Sync: SyncNormal})
	defer s.Close()
	word := parleytest.RandomWord(t)
	m := parleytest.MustSend(t, s, room, u, "please forget "+word)
	if _, _, err := s.DeleteMessage(ctx, parley.Deletion{RoomID: room.ID, Seq: m.Seq, ActorID: u.ID}); err != nil {
		t.Fatalf("DeleteMessage() error = %v", err)
	}
	// What a crash leaves: the database file and its WAL as they are.
	crashed := filepath.Join(t.TempDir(), "parley.db")
	for _, suf := range []string{"", "-wal"} {
		data, err := os.ReadFile(path + suf)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(crashed+suf, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if in := parleytest.FilesHolding(crashed, parleytest.SQLiteFiles, word); len(in) == 0 {
		t.Fatalf("the crashed files hold no text: the test shows nothing")
	}
	s.Close()
	eraseEvery = time.Second
	s2, err := Open(ctx, Config{Path: crashed, Sync: SyncNormal})
	if err != nil {
		t.Fatalf("Open() after the crash: %v", err)
	}
	defer s2.Close()
	parleytest.Eventually(t, 10*time.Second, func() bool { return s2.ck.erases.Load() == 1 }, "no TRUNCATE checkpoint at Open")
	if in := parleytest.FilesHolding(crashed, parleytest.SQLiteFiles, word); len(in) > 0 {
		t.Errorf("after Open and its TRUNCATE checkpoint, the text is in %v", in)
	}
	if got, err := s2.Messages(ctx, room.ID, parley.Page{Limit: 10}); err != nil || len(got) != 1 || !got[0].Deleted() {
		t.Errorf("Messages() after the crash = %+v, %v; want the tombstone", got, err)
	}
}
