package parleytest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"parley"
)

// testReactions runs the cases of reactions (design §3b).
func testReactions(t *testing.T, newStore NewStoreFunc) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, newStore NewStoreFunc)
	}{
		{"AddRemove", testReactAddRemove},
		{"Bounds", testReactBounds},
		{"Deleted", testReactDeleted},
		{"Concurrent", testReactConcurrent},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore) })
	}
}

// MustReact adds (add) or removes u's emoji on message seq of room r.
func MustReact(t testing.TB, s parley.Store, r parley.Room, u parley.User, seq int64, emoji string, add bool) (parley.Message, bool) {
	t.Helper()
	m, changed, err := s.React(context.Background(), parley.React{RoomID: r.ID, Seq: seq, UserID: u.ID, Emoji: emoji, Add: add})
	if err != nil {
		t.Fatalf("React(%d, %q, add %v) as %s error = %v", seq, emoji, add, u.Name, err)
	}
	return m, changed
}

// counts renders reactions as "emoji×count ..." for comparisons.
func counts(rs []parley.Reaction) string {
	s := ""
	for _, r := range rs {
		s += fmt.Sprintf("%s×%d ", r.Emoji, r.Count)
	}
	return s
}

// messageAt reads message seq of room r through the history page.
func messageAt(t *testing.T, s parley.Store, r parley.Room, seq int64) parley.Message {
	t.Helper()
	page, err := s.Messages(context.Background(), r.ID, parley.Page{After: seq - 1, Limit: 1})
	if err != nil || len(page) != 1 {
		t.Fatalf("Messages(after %d) = %d messages, %v", seq-1, len(page), err)
	}
	return page[0]
}

// testReactAddRemove: adds and removes, their repeats (nothing stored, no
// event), the counts in the order of each emoji's earliest reaction on
// every read path, who reacted, the caller's own, and the change numbers
// and events.
func testReactAddRemove(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	alice, bob := MustCreateUser(t, s, "alice"), MustCreateUser(t, s, "bob")
	room := MustCreateRoom(t, s, alice, "reactions", 0)
	MustJoin(t, s, room, bob)
	MustSend(t, s, room, alice, "react to me")
	MustSend(t, s, room, bob, "the last one")
	AllRooms(t, s, bob, 10) // warm what a cache keeps
	if _, err := s.Messages(ctx, room.ID, parley.Newest(10)); err != nil {
		t.Fatal(err)
	}
	mark := rec.Len()

	m, changed := MustReact(t, s, room, bob, 1, "👍", true)
	if !changed || m.Change != 1 || counts(m.Reactions) != "👍×1 " {
		t.Errorf("first reaction = changed %v, change %d, %q; want changed, change 1, 👍×1", changed, m.Change, counts(m.Reactions))
	}
	if m, changed = MustReact(t, s, room, bob, 1, "👍", true); changed || m.Change != 1 || counts(m.Reactions) != "👍×1 " {
		t.Errorf("repeated add = changed %v, change %d, %q; want nothing changed", changed, m.Change, counts(m.Reactions))
	}
	MustReact(t, s, room, alice, 1, "🎉", true)
	m, _ = MustReact(t, s, room, alice, 1, "👍", true)
	if got := counts(m.Reactions); got != "👍×2 🎉×1 " || m.Change != 3 {
		t.Errorf("after three adds = %q at change %d, want 👍×2 🎉×1 at change 3", got, m.Change)
	}
	if got := counts(messageAt(t, s, room, 1).Reactions); got != "👍×2 🎉×1 " {
		t.Errorf("history page reactions = %q, want 👍×2 🎉×1", got)
	}
	if page, _ := s.Messages(ctx, room.ID, parley.Newest(10)); len(page) != 2 || counts(page[1].Reactions) != "👍×2 🎉×1 " || len(page[0].Reactions) != 0 {
		t.Errorf("newest page = %+v, want message 1 with 👍×2 🎉×1 and message 2 with none", page)
	}
	if r, _ := s.Room(ctx, room.ID); r.LastChange != 3 {
		t.Errorf("room last_change = %d, want 3", r.LastChange)
	}
	users, err := s.Reactors(ctx, room.ID, 1, "👍", 10)
	if err != nil || len(users) != 2 || users[0].ID != bob.ID || users[1].ID != alice.ID {
		t.Errorf("Reactors(👍) = %+v, %v; want bob then alice", users, err)
	}
	if users, err := s.Reactors(ctx, room.ID, 1, "🙈", 10); err != nil || len(users) != 0 {
		t.Errorf("Reactors(no one's emoji) = %+v, %v; want none", users, err)
	}
	_, err = s.Reactors(ctx, room.ID, 99, "👍", 10)
	wantCode(t, "Reactors(unknown seq)", err, parley.CodeNotFound)
	mine, err := s.MyReactions(ctx, room.ID, alice.ID, []int64{1, 2})
	if err != nil || len(mine) != 1 || !slices.Equal(mine[1], []string{"🎉", "👍"}) {
		t.Errorf("MyReactions(alice) = %v, %v; want 1: [🎉 👍]", mine, err)
	}

	// With bob's 👍 gone, the earliest 👍 left (alice's) came after 🎉:
	// 🎉 leads now.
	m, changed = MustReact(t, s, room, bob, 1, "👍", false)
	if !changed || counts(m.Reactions) != "🎉×1 👍×1 " || m.Change != 4 {
		t.Errorf("after bob's removal = changed %v %q change %d, want 🎉×1 👍×1 at change 4", changed, counts(m.Reactions), m.Change)
	}
	if _, changed = MustReact(t, s, room, bob, 1, "👍", false); changed {
		t.Error("repeated removal changed something")
	}
	MustReact(t, s, room, alice, 1, "🎉", false)
	m, _ = MustReact(t, s, room, alice, 1, "👍", false)
	if len(m.Reactions) != 0 || len(messageAt(t, s, room, 1).Reactions) != 0 {
		t.Errorf("after every removal = %q, want no reactions", counts(m.Reactions))
	}
	changedMsgs, err := s.Changed(ctx, room.ID, 0, 10)
	if err != nil || len(changedMsgs) != 1 || changedMsgs[0].Seq != 1 || changedMsgs[0].Change != 6 {
		t.Errorf("Changed(0) = %+v, %v; want message 1 at change 6", changedMsgs, err)
	}
	_, _, err = s.React(ctx, parley.React{RoomID: room.ID, Seq: 99, UserID: bob.ID, Emoji: "👍", Add: true})
	wantCode(t, "React(unknown seq)", err, parley.CodeNotFound)
	_, _, err = s.React(ctx, parley.React{RoomID: "nope", Seq: 1, UserID: bob.ID, Emoji: "👍", Add: true})
	wantCode(t, "React(unknown room)", err, parley.CodeNotFound)

	// An edit keeps the reactions.
	MustReact(t, s, room, bob, 1, "👀", true)
	if m := MustEdit(t, s, room, alice, 1, "edited"); counts(m.Reactions) != "👀×1 " {
		t.Errorf("edited message reactions = %q, want 👀×1", counts(m.Reactions))
	}

	var evs []parley.Event
	for _, e := range rec.Events()[mark:] {
		if e.Kind == parley.EventReaction {
			evs = append(evs, e)
		}
	}
	want := []string{"bob 👍 added", "alice 🎉 added", "alice 👍 added", "bob 👍 removed", "alice 🎉 removed", "alice 👍 removed", "bob 👀 added"}
	var got []string
	for i, e := range evs {
		got = append(got, fmt.Sprintf("%s %s %s", map[string]string{alice.ID: "alice", bob.ID: "bob"}[e.UserID], e.Emoji, e.Reason))
		if e.Message.Change != int64(i+1) || e.Room.LastChange != int64(i+1) || e.Message.Seq != 1 {
			t.Errorf("event %d = change %d, room change %d, seq %d; want change %d of message 1", i, e.Message.Change, e.Room.LastChange, e.Message.Seq, i+1)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("reaction events = %q, want %q", got, want)
	}
}

// testReactBounds: at most MaxReactionsPerUser per user and
// MaxReactionsPerMessage per message; a refused add stores nothing.
func testReactBounds(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	alice, bob, carol := MustCreateUser(t, s, "alice"), MustCreateUser(t, s, "bob"), MustCreateUser(t, s, "carol")
	room := MustCreateRoom(t, s, alice, "bounds", 0)
	MustJoin(t, s, room, bob)
	MustJoin(t, s, room, carol)
	MustSend(t, s, room, alice, "flood me")
	emoji := func(i int) string { return fmt.Sprintf(":e%d:", i) }
	for i := range parley.MaxReactionsPerUser {
		MustReact(t, s, room, alice, 1, emoji(i), true)
	}
	_, _, err := s.React(ctx, parley.React{RoomID: room.ID, Seq: 1, UserID: alice.ID, Emoji: emoji(99), Add: true})
	wantCode(t, "React(past the per-user bound)", err, parley.CodeConflict)
	// Another user may join an emoji that is there, and add new ones up
	// to the per-message bound.
	MustReact(t, s, room, bob, 1, emoji(0), true)
	for i := parley.MaxReactionsPerUser; i < parley.MaxReactionsPerMessage-1; i++ {
		MustReact(t, s, room, bob, 1, emoji(i), true)
	}
	MustReact(t, s, room, carol, 1, emoji(parley.MaxReactionsPerMessage-1), true)
	_, _, err = s.React(ctx, parley.React{RoomID: room.ID, Seq: 1, UserID: carol.ID, Emoji: emoji(98), Add: true})
	wantCode(t, "React(past the per-message bound)", err, parley.CodeConflict)
	m := messageAt(t, s, room, 1)
	if len(m.Reactions) != parley.MaxReactionsPerMessage || m.Reactions[0].Count != 2 || m.Reactions[0].Emoji != emoji(0) {
		t.Errorf("reactions = %q, want %d distinct, %s×2 first", counts(m.Reactions), parley.MaxReactionsPerMessage, emoji(0))
	}
	if r, _ := s.Room(ctx, room.ID); r.LastChange != int64(parley.MaxReactionsPerMessage+1) {
		t.Errorf("last_change = %d, want %d: a refused add takes no change", r.LastChange, parley.MaxReactionsPerMessage+1)
	}
}

// testReactDeleted: a tombstone refuses reactions (CodeConflict) and has
// none left: its deletion takes them away.
func testReactDeleted(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	alice := MustCreateUser(t, s, "alice")
	room := MustCreateRoom(t, s, alice, "gone", 0)
	MustSend(t, s, room, alice, "soon gone")
	MustReact(t, s, room, alice, 1, "👍", true)
	if m := MustDelete(t, s, room, alice, 1); len(m.Reactions) != 0 {
		t.Errorf("tombstone reactions = %q, want none", counts(m.Reactions))
	}
	if m := messageAt(t, s, room, 1); len(m.Reactions) != 0 {
		t.Errorf("tombstone read back with reactions %q", counts(m.Reactions))
	}
	if users, err := s.Reactors(ctx, room.ID, 1, "👍", 10); err != nil || len(users) != 0 {
		t.Errorf("Reactors(tombstone) = %+v, %v; want none", users, err)
	}
	_, _, err := s.React(ctx, parley.React{RoomID: room.ID, Seq: 1, UserID: alice.ID, Emoji: "👍", Add: true})
	wantCode(t, "React(tombstone)", err, parley.CodeConflict)
	_, _, err = s.React(ctx, parley.React{RoomID: room.ID, Seq: 1, UserID: alice.ID, Emoji: "👍", Add: false})
	wantCode(t, "React(remove from a tombstone)", err, parley.CodeConflict)
}

// testReactConcurrent: many members react at once: every reaction counts
// once and the change numbers have no holes.
func testReactConcurrent(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	owner := MustCreateUser(t, s, "owner")
	room := MustCreateRoom(t, s, owner, "crowd", 0)
	MustSend(t, s, room, owner, "popular")
	const n = 16
	users := make([]parley.User, n)
	for i := range users {
		users[i] = MustCreateUser(t, s, fmt.Sprint("u", i))
		MustJoin(t, s, room, users[i])
	}
	mark := rec.Len()
	var wg sync.WaitGroup
	for i := range users {
		wg.Go(func() {
			for _, e := range []string{"👍", "🎉"} {
				if _, _, err := s.React(ctx, parley.React{RoomID: room.ID, Seq: 1, UserID: users[i].ID, Emoji: e, Add: true}); err != nil {
					t.Errorf("React() error = %v", err)
				}
			}
		})
	}
	wg.Wait()
	m := messageAt(t, s, room, 1)
	if counts(m.Reactions) != fmt.Sprintf("👍×%d 🎉×%d ", n, n) && counts(m.Reactions) != fmt.Sprintf("🎉×%d 👍×%d ", n, n) {
		t.Errorf("reactions = %q, want %d of each", counts(m.Reactions), n)
	}
	var changes []int64
	for _, e := range rec.Events()[mark:] {
		if e.Kind == parley.EventReaction {
			changes = append(changes, e.Message.Change)
		}
	}
	slices.Sort(changes)
	for i, c := range changes {
		if c != int64(i+1) {
			t.Fatalf("change numbers %v, want 1..%d with no holes", changes, 2*n)
		}
	}
	if len(changes) != 2*n {
		t.Errorf("%d reaction events, want %d", len(changes), 2*n)
	}
}
