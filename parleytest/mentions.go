package parleytest

import (
	"context"
	"testing"

	"parley"
)

// testMentions: a message keeps its mentions on every read path and in
// its commit event; an edit replaces them and a deletion drops them; a
// member's unread mentions are those above the read position that name
// the member or the room, not deleted, and none at level none; levels are
// kept per member and refused to non-members. Each member's room list
// (Rooms: the entries' Mentions and Notifications) says the same as
// NotifyStates at every step, whether a cache serves it from memory
// (warmed before the changes, so kept current by their events) or a
// store reads it.
func testMentions(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	alice, bob, carol := MustCreateUser(t, s, "alice"), MustCreateUser(t, s, "bob"), MustCreateUser(t, s, "carol")
	room := MustCreateRoom(t, s, alice, "mentions", 0)
	other := MustCreateRoom(t, s, alice, "other", 0)
	MustJoin(t, s, room, bob)
	MustJoin(t, s, room, carol)
	MustJoin(t, s, other, bob)
	for _, u := range []parley.User{alice, bob, carol} {
		AllRooms(t, s, u, 10) // warm what a cache keeps
	}

	send := func(u parley.User, body string, mentions ...string) parley.Message {
		t.Helper()
		m, _, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: u.ID, SenderName: u.Name, Body: body,
			Mentions: parley.JoinMentions(mentions)})
		if err != nil {
			t.Fatalf("Send(%q) error = %v", body, err)
		}
		return m
	}
	mark := rec.Len()
	m1 := send(alice, "hi @bob", bob.ID)
	send(alice, "no mention")
	m3 := send(alice, "@bob and @carol", bob.ID, carol.ID)
	m4 := send(alice, "@room", parley.MentionRoom)

	if m1.Mentions != parley.MentionList(bob.ID) {
		t.Errorf("Send mentions = %q, want %q", m1.Mentions, bob.ID)
	}
	if got := messageAt(t, s, room, 3).Mentions.IDs(); len(got) != 2 || got[0] != bob.ID || got[1] != carol.ID {
		t.Errorf("history mentions of seq 3 = %v, want [bob carol]", got)
	}
	if got := messageAt(t, s, room, 2).Mentions; got != "" {
		t.Errorf("history mentions of a message without = %q, want none", got)
	}
	evs := rec.Events()[mark:]
	if len(evs) == 0 || evs[0].Kind != parley.EventMessage || evs[0].Message.Mentions != m1.Mentions {
		t.Errorf("first event after the sends = %+v, want the message with its mentions", evs)
	}

	states := func(u parley.User) map[string]parley.RoomNotify {
		t.Helper()
		st, err := s.NotifyStates(ctx, u.ID)
		if err != nil {
			t.Fatalf("NotifyStates(%s) error = %v", u.Name, err)
		}
		for _, e := range AllRooms(t, s, u, 1) { // pages of one: the first page and the cursor's
			want, ok := st[e.Room.ID]
			if !ok {
				want = parley.RoomNotify{Level: parley.NotifyAll}
			}
			if got := (parley.RoomNotify{Level: e.Notifications, Mentions: e.Mentions}); got != want {
				t.Errorf("%s's room list entry of %s: level %q, %d mentions; NotifyStates says %+v", u.Name, e.Room.Title, e.Notifications, e.Mentions, want)
			}
		}
		return st
	}
	if got := states(bob)[room.ID]; got != (parley.RoomNotify{Level: parley.NotifyAll, Mentions: 3}) {
		t.Errorf("bob's state = %+v, want level all, 3 mentions", got)
	}
	if got := states(carol)[room.ID]; got.Mentions != 2 {
		t.Errorf("carol's mentions = %d, want 2 (seq 3 and @room)", got.Mentions)
	}
	if _, ok := states(alice)[room.ID]; ok {
		t.Errorf("alice (the sender, read to the end) has a state: %+v", states(alice)[room.ID])
	}
	if _, ok := states(bob)[other.ID]; ok {
		t.Errorf("bob has a state in a room without mentions")
	}

	// An edit replaces the mentions; a deletion drops them.
	if e, err := s.EditMessage(ctx, parley.Edit{RoomID: room.ID, Seq: m3.Seq, EditorID: alice.ID, Body: "just @carol",
		Mentions: parley.MentionList(carol.ID)}); err != nil || e.Mentions != parley.MentionList(carol.ID) {
		t.Fatalf("EditMessage = %q, %v; want mentions of carol", e.Mentions, err)
	}
	if got := messageAt(t, s, room, m3.Seq).Mentions; got != parley.MentionList(carol.ID) {
		t.Errorf("mentions after the edit = %q, want carol only", got)
	}
	if got := states(bob)[room.ID].Mentions; got != 2 {
		t.Errorf("bob's mentions after the edit = %d, want 2", got)
	}
	if d, _, err := s.DeleteMessage(ctx, parley.Deletion{RoomID: room.ID, Seq: m4.Seq, ActorID: alice.ID}); err != nil || d.Mentions != "" {
		t.Fatalf("DeleteMessage = %q, %v; want no mentions", d.Mentions, err)
	}
	if got := states(bob)[room.ID].Mentions; got != 1 {
		t.Errorf("bob's mentions after the deletion = %d, want 1", got)
	}

	// Reading clears them.
	if _, err := s.MarkRead(ctx, room.ID, bob.ID, m1.Seq); err != nil {
		t.Fatal(err)
	}
	if _, ok := states(bob)[room.ID]; ok {
		t.Errorf("bob has a state after reading past his mentions: %+v", states(bob)[room.ID])
	}

	// Levels.
	if err := s.SetNotifyLevel(ctx, room.ID, carol.ID, parley.NotifyNone); err != nil {
		t.Fatal(err)
	}
	if err := s.SetNotifyLevel(ctx, room.ID, bob.ID, parley.NotifyMentions); err != nil {
		t.Fatal(err)
	}
	if got := states(carol)[room.ID]; got != (parley.RoomNotify{Level: parley.NotifyNone}) {
		t.Errorf("carol's state at level none = %+v, want level none, no mentions", got)
	}
	if got := states(bob)[room.ID]; got != (parley.RoomNotify{Level: parley.NotifyMentions}) {
		t.Errorf("bob's state at level mentions = %+v, want level mentions, no mentions", got)
	}
	levels, err := s.NotifyLevels(ctx, room.ID, []string{alice.ID, bob.ID, carol.ID, "nobody"})
	if err != nil || len(levels) != 2 || levels[bob.ID] != parley.NotifyMentions || levels[carol.ID] != parley.NotifyNone {
		t.Errorf("NotifyLevels = %v, %v; want bob mentions, carol none", levels, err)
	}
	if err := s.SetNotifyLevel(ctx, other.ID, carol.ID, parley.NotifyNone); parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("SetNotifyLevel of a non-member = %v, want not_found", err)
	}

	// At level none a mention is not counted; back at all, the unread
	// ones count again (seq 3, "just @carol", and this one).
	send(bob, "@carol at none", carol.ID)
	if got := states(carol)[room.ID]; got != (parley.RoomNotify{Level: parley.NotifyNone}) {
		t.Errorf("carol's state at level none after a mention = %+v, want level none, no mentions", got)
	}
	if err := s.SetNotifyLevel(ctx, room.ID, carol.ID, parley.NotifyAll); err != nil {
		t.Fatal(err)
	}
	if got := states(carol)[room.ID]; got != (parley.RoomNotify{Level: parley.NotifyAll, Mentions: 2}) {
		t.Errorf("carol's state back at level all = %+v, want level all, 2 mentions", got)
	}
	// A read short of the end clears the mentions up to it only; an edit
	// that adds a mention above the read position counts it, one that
	// removes it uncounts it.
	m5 := send(alice, "@bob five", bob.ID)
	m6 := send(alice, "@bob six", bob.ID)
	m7 := send(alice, "seven")
	if got := states(bob)[room.ID].Mentions; got != 2 {
		t.Errorf("bob's mentions after two more = %d, want 2", got)
	}
	if _, err := s.MarkRead(ctx, room.ID, bob.ID, m5.Seq); err != nil {
		t.Fatal(err)
	}
	if got := states(bob)[room.ID].Mentions; got != 1 {
		t.Errorf("bob's mentions after reading to the first of two = %d, want 1", got)
	}
	if _, err := s.EditMessage(ctx, parley.Edit{RoomID: room.ID, Seq: m7.Seq, EditorID: alice.ID, Body: "seven @bob",
		Mentions: parley.MentionList(bob.ID)}); err != nil {
		t.Fatal(err)
	}
	if got := states(bob)[room.ID].Mentions; got != 2 {
		t.Errorf("bob's mentions after an edit mentions him = %d, want 2", got)
	}
	if _, err := s.EditMessage(ctx, parley.Edit{RoomID: room.ID, Seq: m6.Seq, EditorID: alice.ID, Body: "six"}); err != nil {
		t.Fatal(err)
	}
	if got := states(bob)[room.ID].Mentions; got != 1 {
		t.Errorf("bob's mentions after an edit unmentions him = %d, want 1", got)
	}
	// A member who joins after a mention of @room has it unread.
	dave := MustCreateUser(t, s, "dave")
	AllRooms(t, s, dave, 10)
	send(alice, "@room again", parley.MentionRoom)
	MustJoin(t, s, room, dave)
	states(dave)
	// Leaving drops the room from the list; joining again starts at the default level.
	if err := s.SetNotifyLevel(ctx, room.ID, bob.ID, parley.NotifyNone); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Leave(ctx, room.ID, bob.ID); err != nil {
		t.Fatal(err)
	}
	states(bob)
	MustJoin(t, s, room, bob)
	if got := states(bob)[room.ID]; got.Level == parley.NotifyNone {
		t.Errorf("bob's level after leaving and joining again = %q, want the default", got.Level)
	}
}
