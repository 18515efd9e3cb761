package parleytest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"parley"
)

// testSearchTrails: the search index may trail the commit (design §5),
// but once WaitIndexed returns every message sent before is findable
// exactly once (hits counted over every page, by id), an edit's old words
// are gone and its new ones found, and a deleted message is never
// returned, whether the change came before the indexer reached the
// message or after.
func testSearchTrails(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	alice := MustCreateUser(t, s, "alice")
	rooms := []parley.Room{MustCreateRoom(t, s, alice, "one", 0), MustCreateRoom(t, s, alice, "two", 0), MustCreateRoom(t, s, alice, "three", 0)}

	// A backlog from concurrent senders, then changes made at once, most
	// of them before the indexer reaches their message.
	const perRoom = 150
	var wg sync.WaitGroup
	for _, r := range rooms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range perRoom {
				if _, _, err := s.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: alice.ID, SenderName: alice.Name,
					Body: fmt.Sprintf("backlog %s item%d", r.Title, i)}); err != nil {
					t.Errorf("Send() error = %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
	early := rooms[0]
	MustEdit(t, s, early, alice, perRoom, "rewritten early")                // the last: likely not indexed yet
	MustDelete(t, s, early, alice, perRoom-1)                               // likewise
	MustEdit(t, s, early, alice, perRoom-2, "rewritten early then deleted") // edited, then deleted
	MustDelete(t, s, early, alice, perRoom-2)                               //
	WaitIndexed(t, s)

	count := func(q string) (int, map[string]int) {
		t.Helper()
		seen := map[string]int{}
		ids := searchIDs(t, s, alice, q, 37)
		for _, id := range ids {
			seen[id]++
		}
		return len(ids), seen
	}
	want := 3*perRoom - 3 // the edited one's text lost "backlog", two deleted
	if n, seen := count("backlog"); n != want || len(seen) != want {
		t.Errorf("search backlog after WaitIndexed: %d hits of %d messages, want %d, each once", n, len(seen), want)
	}
	if n, _ := count("rewritten early"); n != 1 {
		t.Errorf("search for an edit's new words: %d hits, want 1", n)
	}
	// Seq i+1 holds item i: the last three are edited or deleted.
	for i, wantN := range map[int]int{perRoom - 1: 0, perRoom - 2: 0, perRoom - 3: 0, perRoom - 4: 1} {
		q := fmt.Sprintf("item%d", i)
		if msgs, err := s.SearchRoom(ctx, early.ID, MustQuery(t, q), 0, 10); err != nil || len(msgs) != wantN {
			t.Errorf("SearchRoom(%q) = %d messages, %v; want %d", q, len(msgs), err, wantN)
		}
	}

	// Changes after the indexer passed the message.
	late := rooms[1]
	MustEdit(t, s, late, alice, 1, "rewritten late")
	MustDelete(t, s, late, alice, 2)
	WaitIndexed(t, s)
	if n, _ := count("rewritten late"); n != 1 {
		t.Errorf("search for a late edit's new words: %d hits, want 1", n)
	}
	for _, q := range []string{"item0", "item1"} {
		if msgs, err := s.SearchRoom(ctx, late.ID, MustQuery(t, q), 0, 10); err != nil || len(msgs) != 0 {
			t.Errorf("SearchRoom(%q) after its edit or delete = %d messages, %v; want none", q, len(msgs), err)
		}
	}
	if n, seen := count("backlog"); n != want-2 || len(seen) != want-2 {
		t.Errorf("search backlog after the late changes: %d hits of %d messages, want %d", n, len(seen), want-2)
	}
}
