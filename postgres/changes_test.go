package postgres_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"parley"
	"parley/parleytest"
)

// TestMultiNodeChanges: two nodes editing and deleting messages of one
// room at once, beside sends, give the room the change numbers 1..n, each
// once, and every change's event carries its number; search agrees with
// the final texts.
func TestMultiNodeChanges(t *testing.T) {
	const perNode, nUsers = 60, 6
	nodes, recs := twoNodes(t)
	ctx := context.Background()
	users := parleytest.MustCreateUsers(t, nodes[0], "u", nUsers)
	room := parleytest.MustCreateRoom(t, nodes[0], users[0], "shared", 0)
	var seqs []int64 // a message of each user
	for i, u := range users {
		if i > 0 {
			parleytest.MustJoin(t, nodes[i%2], room, u)
		}
		seqs = append(seqs, parleytest.MustSend(t, nodes[i%2], room, u, "start").Seq)
	}
	var mu sync.Mutex
	var changes []int64
	var wg sync.WaitGroup
	for n, s := range nodes {
		for i := range perNode {
			wg.Go(func() {
				k := (i + n) % nUsers
				u := users[k]
				m, err := s.EditMessage(ctx, parley.Edit{RoomID: room.ID, Seq: seqs[k], EditorID: u.ID, Body: fmt.Sprintf("node%d edit%d", n, i)})
				if err != nil {
					t.Errorf("node %d: EditMessage() error = %v", n, err)
					return
				}
				if i%10 == 0 {
					s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: u.ID, SenderName: u.Name, Body: "beside"})
				}
				mu.Lock()
				changes = append(changes, m.Change)
				mu.Unlock()
			})
		}
	}
	wg.Wait()
	total := int64(2 * perNode)
	slices.Sort(changes)
	for i, c := range changes {
		if c != int64(i+1) {
			t.Fatalf("change numbers = %v, want 1..%d each once", changes, total)
		}
	}
	var evs []int64
	for _, rec := range recs {
		for _, e := range rec.Events() {
			if e.Kind == parley.EventEdited {
				evs = append(evs, e.Message.Change)
			}
		}
	}
	slices.Sort(evs)
	if !slices.Equal(evs, changes) {
		t.Errorf("edit events carry changes %v, want %v", evs, changes)
	}
	for _, s := range nodes {
		if r := parleytest.MustRoom(t, s, room.ID); r.LastChange != total {
			t.Errorf("LastChange = %d, want %d", r.LastChange, total)
		}
	}
	changed, err := nodes[1].Changed(ctx, room.ID, 0, 100)
	if err != nil || len(changed) != nUsers {
		t.Fatalf("Changed() = %d, %v; want %d messages", len(changed), err, nUsers)
	}
	for _, m := range changed {
		found, err := nodes[0].SearchRoom(ctx, room.ID, parleytest.MustQuery(t, m.Body), 0, 10)
		if err != nil || len(found) != 1 || found[0].Seq != m.Seq {
			t.Errorf("SearchRoom(%q) = %v, %v; want seq %d alone", m.Body, found, err, m.Seq)
		}
	}
}
