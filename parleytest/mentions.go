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
// kept per member and refused to non-members.
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
	AllRooms(t, s, bob, 10) // warm what a cache keeps

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
}
