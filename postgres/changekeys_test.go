package postgres_test

import (
	"context"
	"errors"
	"sync"
	"testing"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
)

// TestChangeKeysSurviveRestart: the idempotency keys of an edit and a
// deletion are committed with them: a store opened again on the database
// still finds them.
func TestChangeKeysSurviveRestart(t *testing.T) {
	dbURL := pgtest.Schema(t)
	s, err := postgres.Open(context.Background(), postgres.Config{URL: dbURL})
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	k := parleytest.MakeKeyedChanges(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	parleytest.RepeatKeyedChanges(t, mustOpen(t, postgres.Config{URL: dbURL}), k)
}

// TestMultiNodeChangeKeys: a keyed change made through one node is a repeat
// through the other; the same keyed edit and deletion sent through both
// nodes at once apply once, and every caller gets the same answer.
func TestMultiNodeChangeKeys(t *testing.T) {
	nodes, recs := twoNodes(t)
	k := parleytest.MakeKeyedChanges(t, nodes[0])
	parleytest.RepeatKeyedChanges(t, nodes[1], k)

	ctx := context.Background()
	u := parleytest.MustCreateUser(t, nodes[0], "racer")
	room := parleytest.MustCreateRoom(t, nodes[1], u, "race", 0)
	m1, m2 := parleytest.MustSend(t, nodes[0], room, u, "one"), parleytest.MustSend(t, nodes[1], room, u, "two")
	const perNode = 12
	type answer struct {
		edit, del parley.Message
		deleted   bool
		err       error
	}
	answers := make([]answer, 2*perNode)
	var wg sync.WaitGroup
	for i := range answers {
		s := nodes[i%2]
		wg.Go(func() {
			a := &answers[i]
			var err1, err2 error
			a.edit, err1 = s.EditMessage(ctx, parley.Edit{RoomID: room.ID, Seq: m1.Seq, EditorID: u.ID, Body: "one, edited", ClientID: "k-edit"})
			a.del, a.deleted, err2 = s.DeleteMessage(ctx, parley.Deletion{RoomID: room.ID, Seq: m2.Seq, ActorID: u.ID, ClientID: "k-del"})
			a.err = errors.Join(err1, err2)
		})
	}
	wg.Wait()
	deleted := 0
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("caller %d: %v", i, a.err)
		}
		if a.edit.Change != answers[0].edit.Change || a.del.Change != answers[0].del.Change {
			t.Errorf("caller %d got changes %d and %d, caller 0 %d and %d: want one answer",
				i, a.edit.Change, a.del.Change, answers[0].edit.Change, answers[0].del.Change)
		}
		if a.deleted {
			deleted++
		}
	}
	if deleted != 1 {
		t.Errorf("%d callers deleted, want 1", deleted)
	}
	for n, s := range nodes {
		if last := parleytest.MustRoom(t, s, room.ID).LastChange; last != 2 {
			t.Errorf("node %d: the race room's last_change = %d, want 2", n, last)
		}
	}
	changes := 0
	for _, rec := range recs {
		for _, ev := range rec.Events() {
			if (ev.Kind == parley.EventEdited || ev.Kind == parley.EventDeleted) && ev.Room.ID == room.ID {
				changes++
			}
		}
	}
	if changes != 2 {
		t.Errorf("the nodes reported %d change events of the race room, want 2", changes)
	}
}
