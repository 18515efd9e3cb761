package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"parley/parleytest"
	"parley/retention"
)

// TestExpiredTextLeavesFiles: the text of a message the retention sweeper
// deleted leaves parley.db, its WAL and its shm within EraseBound, as a
// deleted message's does (erase_test.go).
func TestExpiredTextLeavesFiles(t *testing.T) {
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
	parleytest.MustSend(t, s, room, u, "please forget "+word+" soon")
	mustOptimizeIndex(t, path)
	kept := parleytest.MustSend(t, s, room, u, "kept")
	parleytest.Eventually(t, 10*time.Second, func() bool { return len(parleytest.FilesHolding(path, []string{""}, word)) == 1 },
		"the message never reached the database file: %v", parleytest.FilesHolding(path, parleytest.SQLiteFiles, word))

	n, err := retention.Sweep(context.Background(), s, kept.SentAt.Add(time.Hour), time.Hour, 50, 8)
	if err != nil || n != 201 {
		t.Fatalf("Sweep(before the kept message) = %d, %v, want 201 deleted", n, err)
	}
	start := time.Now()
	if !parleytest.Poll(10*time.Second, func() bool { return len(parleytest.FilesHolding(path, parleytest.SQLiteFiles, word)) == 0 }) {
		t.Errorf("10 s after the sweep, the expired text is still in %v", parleytest.FilesHolding(path, parleytest.SQLiteFiles, word))
	} else {
		t.Logf("expired text gone from the files %v after the sweep (bound %v)", time.Since(start), EraseBound)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	if in := parleytest.FilesHolding(path, parleytest.SQLiteFiles, word); len(in) > 0 {
		t.Errorf("after Close, the expired text is in %v", in)
	}
}
