package postgres_test

import (
	"context"
	"maps"
	"sync"
	"testing"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
)

// TestBeforeChanges: every kind of change of a stored message (an edit,
// a reaction, a pin, a reply's thread summary, a deletion) is announced
// with its room before its batch runs; a plain send is not.
func TestBeforeChanges(t *testing.T) {
	var mu sync.Mutex
	heard := map[string]int{}
	var decided, committed int
	s := mustOpen(t, postgres.Config{URL: pgtest.Schema(t), BeforeChanges: func(rooms map[string]int) func(bool) {
		mu.Lock()
		defer mu.Unlock()
		for room, n := range rooms {
			heard[room] += n
		}
		return func(ok bool) {
			mu.Lock()
			defer mu.Unlock()
			decided++
			if ok {
				committed++
			}
		}
	}})
	took := func() map[string]int {
		mu.Lock()
		defer mu.Unlock()
		out := maps.Clone(heard)
		clear(heard)
		return out
	}
	u := parleytest.MustCreateUser(t, s, "ann")
	r := parleytest.MustCreateRoom(t, s, u, "r", 0)
	parleytest.MustSend(t, s, r, u, "one")
	parleytest.MustSend(t, s, r, u, "two")
	if got := took(); len(got) != 0 {
		t.Errorf("sends announced %v, want nothing", got)
	}
	parleytest.MustEdit(t, s, r, u, 1, "uno")
	parleytest.MustReact(t, s, r, u, 1, "👍", true)
	parleytest.MustPin(t, s, r, u, 2, true)
	parleytest.MustReply(t, s, r, u, 1, "a reply")
	parleytest.MustDelete(t, s, r, u, 2)
	if got := took(); got[r.ID] != 5 || len(got) != 1 {
		t.Errorf("changes announced %v, want %s: 5", got, r.ID)
	}
	// A refused change (not the sender's) changes nothing; its batch
	// commits, and its outcome is told all the same.
	bob := parleytest.MustCreateUser(t, s, "bob")
	if _, err := s.EditMessage(context.Background(), parley.Edit{RoomID: r.ID, Seq: 1, EditorID: bob.ID, Body: "x"}); err == nil {
		t.Fatal("bob edited ann's message")
	}
	mu.Lock()
	defer mu.Unlock()
	if decided != 6 || committed != 6 {
		t.Errorf("outcomes told = %d (%d committed), want 6, all committed", decided, committed)
	}
}
