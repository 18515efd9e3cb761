package parleytest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"parley"
)

// testChanges runs the cases of message changes and search (design §3a):
// edits.go, changekeys.go and search.go.
func testChanges(t *testing.T, newStore NewStoreFunc) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, newStore NewStoreFunc)
	}{
		{"EditDelete", testEditDelete},
		{"ChangeNumbers", testChangeNumbers},
		{"ChangedPaging", testChangedPaging},
		{"ChangePlaces", testChangePlaces},
		{"Search", testSearch},
		{"SearchPaging", testSearchPaging},
		{"ChangeKeys", testChangeKeys},
		{"ChangeKeysConcurrent", testChangeKeysConcurrent},
		{"SearchRooms", testSearchRooms},
		{"SearchRoomNumbers", testSearchRoomNumbers},
		{"SearchManyRooms", testSearchManyRooms},
		{"SearchTrails", testSearchTrails},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore) })
	}
}

// MustEdit edits message seq of room r as u.
func MustEdit(t testing.TB, s parley.Store, r parley.Room, u parley.User, seq int64, body string) parley.Message {
	t.Helper()
	m, err := s.EditMessage(context.Background(), parley.Edit{RoomID: r.ID, Seq: seq, EditorID: u.ID, Body: body})
	if err != nil {
		t.Fatalf("EditMessage(%s, %d, %q) error = %v", r.ID, seq, body, err)
	}
	return m
}

// MustDelete deletes message seq of room r as its sender u.
func MustDelete(t testing.TB, s parley.Store, r parley.Room, u parley.User, seq int64) parley.Message {
	t.Helper()
	m, deleted, err := s.DeleteMessage(context.Background(), parley.Deletion{RoomID: r.ID, Seq: seq, ActorID: u.ID})
	if err != nil || !deleted {
		t.Fatalf("DeleteMessage(%s, %d) = deleted %v, %v; want deleted", r.ID, seq, deleted, err)
	}
	return m
}

// seqsOf lists the seqs of msgs.
func seqsOf(msgs []parley.Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Seq
	}
	return out
}

// testEditDelete: who may edit and delete, what each leaves behind (the
// new text, a tombstone at the same seq), on every read path, and the
// events.
func testEditDelete(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	alice, bob := MustCreateUser(t, s, "alice"), MustCreateUser(t, s, "bob")
	room := MustCreateRoom(t, s, alice, "changes", 0)
	MustJoin(t, s, room, bob)
	// Warm what a cache keeps: the room list and the newest page.
	AllRooms(t, s, bob, 10)
	m1, _, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: alice.ID, SenderName: alice.Name, Body: "first draft", ClientID: "c1"})
	if err != nil {
		t.Fatalf("Send() error = %v", err)
	}
	MustSend(t, s, room, bob, "bob's words")
	m3 := MustSend(t, s, room, alice, "the last one")
	if _, err := s.Messages(ctx, room.ID, parley.Newest(10)); err != nil {
		t.Fatalf("Messages() error = %v", err)
	}
	if m1.Change != 0 || m1.EditedAt != nil || m1.DeletedAt != nil {
		t.Errorf("new message = change %d edited %v deleted %v, want 0, nil, nil", m1.Change, m1.EditedAt, m1.DeletedAt)
	}
	mark := rec.Len()

	_, err = s.EditMessage(ctx, parley.Edit{RoomID: room.ID, Seq: m1.Seq, EditorID: bob.ID, Body: "not mine"})
	wantCode(t, "EditMessage(not the sender)", err, parley.CodeForbidden)
	_, err = s.EditMessage(ctx, parley.Edit{RoomID: room.ID, Seq: 99, EditorID: alice.ID, Body: "x"})
	wantCode(t, "EditMessage(unknown seq)", err, parley.CodeNotFound)
	_, err = s.EditMessage(ctx, parley.Edit{RoomID: "nope", Seq: 1, EditorID: alice.ID, Body: "x"})
	wantCode(t, "EditMessage(unknown room)", err, parley.CodeNotFound)
	_, _, err = s.DeleteMessage(ctx, parley.Deletion{RoomID: room.ID, Seq: m1.Seq, ActorID: bob.ID})
	wantCode(t, "DeleteMessage(not the sender, no moderator)", err, parley.CodeForbidden)
	if n := rec.Len(); n != mark {
		t.Errorf("refused changes reported %d events, want none", n-mark)
	}
	if r := MustRoom(t, s, room.ID); r.LastChange != 0 {
		t.Errorf("LastChange after refused changes = %d, want 0", r.LastChange)
	}

	e1 := MustEdit(t, s, room, alice, m1.Seq, "final text")
	if e1.Body != "final text" || e1.Change != 1 || e1.EditedAt == nil || e1.DeletedAt != nil || e1.Seq != m1.Seq ||
		e1.ID != m1.ID || !e1.SentAt.Equal(m1.SentAt) || e1.ClientID != "c1" {
		t.Errorf("edited = %+v, want the same message with the new body, change 1, edited_at set", e1)
	}
	e3 := MustEdit(t, s, room, alice, m3.Seq, "the last one, edited")
	if e3.Change != 2 {
		t.Errorf("second edit change = %d, want 2", e3.Change)
	}
	r := MustRoom(t, s, room.ID)
	if r.LastChange != 2 || r.LastSeq != 3 || !r.LastActivityAt.Equal(m3.SentAt) {
		t.Errorf("room after edits = last_change %d last_seq %d activity %v, want 2, 3 and the last send's time",
			r.LastChange, r.LastSeq, r.LastActivityAt)
	}
	page, err := s.Messages(ctx, room.ID, parley.Newest(10))
	if err != nil || len(page) != 3 || page[0].Body != e3.Body || page[2].Body != e1.Body || page[2].Change != 1 || page[2].EditedAt == nil {
		t.Errorf("newest page after edits = %+v, %v; want the edited versions", page, err)
	}
	list := AllRooms(t, s, bob, 10)
	if len(list) != 1 || list[0].LastMessage == nil || list[0].LastMessage.Body != e3.Body || list[0].Room.LastChange != 2 {
		t.Errorf("room list after edits = %+v, want the edited last message and last_change 2", list)
	}
	// A resend of the edited message's client_id returns it as it is now.
	again, created, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: alice.ID, SenderName: alice.Name, Body: "first draft", ClientID: "c1"})
	if err != nil || created || again.Seq != m1.Seq || again.Body != "final text" {
		t.Errorf("Send(repeat of an edited message) = %+v, %v, %v; want the edited original", again, created, err)
	}

	d3 := MustDelete(t, s, room, alice, m3.Seq)
	if d3.Body != "" || d3.DeletedAt == nil || d3.Change != 3 || d3.Seq != m3.Seq || d3.ID != m3.ID {
		t.Errorf("tombstone = %+v, want the same seq and id, an empty body, deleted_at, change 3", d3)
	}
	_, err = s.EditMessage(ctx, parley.Edit{RoomID: room.ID, Seq: m3.Seq, EditorID: alice.ID, Body: "back"})
	wantCode(t, "EditMessage(deleted)", err, parley.CodeConflict)
	twice, deleted, err := s.DeleteMessage(ctx, parley.Deletion{RoomID: room.ID, Seq: m3.Seq, ActorID: alice.ID})
	if err != nil || deleted || twice.Change != 3 {
		t.Errorf("DeleteMessage(tombstone) = %+v, %v, %v; want it unchanged, deleted false", twice, deleted, err)
	}
	// The owner or an admin (the caller checked) may delete another's.
	d2, deleted, err := s.DeleteMessage(ctx, parley.Deletion{RoomID: room.ID, Seq: 2, ActorID: alice.ID, Moderator: true})
	if err != nil || !deleted || d2.Change != 4 || d2.SenderID != bob.ID || d2.Body != "" {
		t.Errorf("DeleteMessage(moderator) = %+v, %v, %v; want bob's message deleted with change 4", d2, deleted, err)
	}

	for _, p := range []parley.Page{parley.Newest(10), {After: 0, Limit: 10}, parley.Newest(1)} {
		page, err := s.Messages(ctx, room.ID, p)
		if err != nil {
			t.Fatalf("Messages(%+v) error = %v", p, err)
		}
		for _, m := range page {
			if (m.Seq == 2 || m.Seq == 3) && (m.Body != "" || m.DeletedAt == nil) {
				t.Errorf("Messages(%+v) seq %d = %q deleted %v, want a tombstone", p, m.Seq, m.Body, m.DeletedAt)
			}
		}
		if want := min(3, p.Limit); len(page) != want {
			t.Errorf("Messages(%+v) = seqs %v, want %d (tombstones keep their seqs)", p, seqsOf(page), want)
		}
	}
	list = AllRooms(t, s, alice, 10)
	if len(list) != 1 || list[0].LastMessage == nil || list[0].LastMessage.DeletedAt == nil || list[0].LastMessage.Body != "" {
		t.Errorf("room list after delete = %+v, want the tombstone as last message", list)
	}
	// Sending after the changes goes on with the next seq.
	if m4 := MustSend(t, s, room, bob, "after"); m4.Seq != 4 {
		t.Errorf("Send after changes seq = %d, want 4", m4.Seq)
	}
	// A resend of a deleted message's client_id returns the tombstone.
	if _, _, err := s.DeleteMessage(ctx, parley.Deletion{RoomID: room.ID, Seq: m1.Seq, ActorID: alice.ID}); err != nil {
		t.Fatalf("DeleteMessage(1) error = %v", err)
	}
	again, created, err = s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: alice.ID, SenderName: alice.Name, Body: "first draft", ClientID: "c1"})
	if err != nil || created || again.Seq != 1 || again.Body != "" || again.DeletedAt == nil {
		t.Errorf("Send(repeat of a deleted message) = %+v, %v, %v; want the tombstone, nothing stored", again, created, err)
	}

	var kinds []parley.EventKind
	var changes []int64
	for _, e := range rec.Events()[mark:] {
		if e.Kind == parley.EventEdited || e.Kind == parley.EventDeleted {
			kinds = append(kinds, e.Kind)
			changes = append(changes, e.Message.Change)
			if e.Room.LastChange != e.Message.Change || e.Room.ID != room.ID {
				t.Errorf("change event room = %s last_change %d, message change %d; want the room after the change",
					e.Room.ID, e.Room.LastChange, e.Message.Change)
			}
			if e.Kind == parley.EventDeleted && (e.Message.Body != "" || e.Message.DeletedAt == nil) {
				t.Errorf("deleted event message = %+v, want the tombstone", e.Message)
			}
		}
	}
	wantKinds := []parley.EventKind{parley.EventEdited, parley.EventEdited, parley.EventDeleted, parley.EventDeleted, parley.EventDeleted}
	if !slices.Equal(kinds, wantKinds) || !slices.Equal(changes, []int64{1, 2, 3, 4, 5}) {
		t.Errorf("change events = kinds %v changes %v, want %v and 1..5", kinds, changes, wantKinds)
	}
}

// testChangeNumbers: edits from many goroutines at once (and sends beside
// them) take change numbers 1..N of their room with no hole and no repeat,
// and Changed lists each changed message once, in its latest version.
func testChangeNumbers(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	users := MustCreateUsers(t, s, "w", 8)
	room := MustCreateRoom(t, s, users[0], "busy", 0)
	other := MustCreateRoom(t, s, users[0], "other", 0)
	mine := make([]int64, len(users)) // a message of each user
	for i, u := range users {
		if i > 0 {
			MustJoin(t, s, room, u)
		}
		mine[i] = MustSend(t, s, room, u, "v0").Seq
	}
	const edits = 6
	var wg sync.WaitGroup
	got := make([][]int64, len(users))
	errs := make([]error, len(users))
	for i, u := range users {
		wg.Go(func() {
			for k := range edits {
				m, err := s.EditMessage(ctx, parley.Edit{RoomID: room.ID, Seq: mine[i], EditorID: u.ID, Body: fmt.Sprintf("v%d", k+1)})
				if err != nil {
					errs[i] = err
					return
				}
				got[i] = append(got[i], m.Change)
				if i == 0 {
					if _, _, err := s.Send(ctx, parley.NewMessage{RoomID: other.ID, SenderID: u.ID, SenderName: u.Name, Body: "beside"}); err != nil {
						errs[i] = err
						return
					}
				}
			}
		})
	}
	wg.Wait()
	var all []int64
	for i, cs := range got {
		if errs[i] != nil {
			t.Fatalf("EditMessage(%s) error = %v", users[i].Name, errs[i])
		}
		if !slices.IsSorted(cs) {
			t.Errorf("%s's changes %v are not increasing", users[i].Name, cs)
		}
		all = append(all, cs...)
	}
	slices.Sort(all)
	n := int64(len(users) * edits)
	for i, c := range all {
		if c != int64(i+1) {
			t.Fatalf("change numbers %v, want 1..%d with no hole and no repeat", all, n)
		}
	}
	if r := MustRoom(t, s, room.ID); r.LastChange != n {
		t.Errorf("LastChange = %d, want %d", r.LastChange, n)
	}
	if r := MustRoom(t, s, other.ID); r.LastChange != 0 {
		t.Errorf("other room's LastChange = %d, want 0", r.LastChange)
	}
	changed, err := s.Changed(ctx, room.ID, 0, 100)
	if err != nil {
		t.Fatalf("Changed() error = %v", err)
	}
	if len(changed) != len(users) {
		t.Fatalf("Changed(0) = %d messages, want %d (each once)", len(changed), len(users))
	}
	for i, m := range changed {
		if m.Body != fmt.Sprintf("v%d", edits) || (i > 0 && m.Change <= changed[i-1].Change) {
			t.Errorf("Changed(0)[%d] = body %q change %d, want v%d in change order", i, m.Body, m.Change, edits)
		}
	}
	if last := changed[len(changed)-1].Change; last != n {
		t.Errorf("Changed(0) ends at change %d, want %d", last, n)
	}
}

// testChangedPaging: changed_after pages through a room's changes in change
// order, each message in its current version; an unknown room is
// CodeNotFound.
func testChangedPaging(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	u := MustCreateUser(t, s, "u")
	room := MustCreateRoom(t, s, u, "paging", 0)
	for i := range 6 {
		MustSend(t, s, room, u, fmt.Sprintf("m%d", i+1))
	}
	MustEdit(t, s, room, u, 2, "two")  // change 1, later superseded
	MustEdit(t, s, room, u, 5, "five") // change 2
	MustDelete(t, s, room, u, 1)       // change 3
	MustEdit(t, s, room, u, 2, "TWO")  // change 4
	MustEdit(t, s, room, u, 6, "six")  // change 5
	var seqs, changes []int64
	after := int64(0)
	for range 10 {
		page, err := s.Changed(ctx, room.ID, after, 2)
		if err != nil {
			t.Fatalf("Changed(%d) error = %v", after, err)
		}
		if len(page) == 0 {
			break
		}
		for _, m := range page {
			seqs, changes = append(seqs, m.Seq), append(changes, m.Change)
			if m.Seq == 2 && m.Body != "TWO" {
				t.Errorf("Changed: seq 2 body %q, want its current version TWO", m.Body)
			}
		}
		after = page[len(page)-1].Change
	}
	if !slices.Equal(seqs, []int64{5, 1, 2, 6}) || !slices.Equal(changes, []int64{2, 3, 4, 5}) {
		t.Errorf("Changed pages = seqs %v changes %v, want [5 1 2 6] and [2 3 4 5]", seqs, changes)
	}
	if page, err := s.Changed(ctx, room.ID, 5, 10); err != nil || len(page) != 0 {
		t.Errorf("Changed(last) = %v, %v; want none", page, err)
	}
	if _, err := s.Changed(ctx, "nope", 0, 10); parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("Changed(unknown room) error = %v, want not_found", err)
	}
}

// testChangePlaces: Changed tells where each message's last change fell
// among the room's messages (Message.ChangeSeq, the room's last seq when
// it committed), for every kind of change: an edit, a reaction, a pin, a
// thread's summary (after the reply that moved it) and a deletion.
func testChangePlaces(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, nil)
	u := MustCreateUser(t, s, "u")
	room := MustCreateRoom(t, s, u, "places", 0)
	MustSend(t, s, room, u, "m1")
	MustSend(t, s, room, u, "m2")
	MustEdit(t, s, room, u, 1, "one") // after 2
	MustSend(t, s, room, u, "m3")
	MustReact(t, s, room, u, 2, "👍", true) // after 3
	MustSend(t, s, room, u, "m4")
	MustPin(t, s, room, u, 3, true)   // after 4
	MustReply(t, s, room, u, 4, "r5") // 4's thread summary, after 5
	MustSend(t, s, room, u, "m6")
	MustDelete(t, s, room, u, 6) // after 6
	got, err := s.Changed(context.Background(), room.ID, 0, 100)
	if err != nil {
		t.Fatalf("Changed() error = %v", err)
	}
	want := map[int64]int64{1: 2, 2: 3, 3: 4, 4: 5, 6: 6} // seq -> where its change fell
	if len(got) != len(want) {
		t.Fatalf("Changed() = %d messages, want %d", len(got), len(want))
	}
	for _, m := range got {
		if m.ChangeSeq != want[m.Seq] {
			t.Errorf("message %d: ChangeSeq = %d, want %d", m.Seq, m.ChangeSeq, want[m.Seq])
		}
	}
}
