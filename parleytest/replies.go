package parleytest

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"parley"
)

// testReplies runs the cases of replies and threads (design §3b).
func testReplies(t *testing.T, newStore NewStoreFunc) {
	for _, tc := range []struct {
		name string
		run  func(t *testing.T, newStore NewStoreFunc)
	}{
		{"Thread", testThread},
		{"Refused", testReplyRefused},
		{"Excerpt", testReplyExcerpt},
	} {
		t.Run(tc.name, func(t *testing.T) { tc.run(t, newStore) })
	}
}

// MustReply sends body as u, a reply to message to of room r.
func MustReply(t testing.TB, s parley.Store, r parley.Room, u parley.User, to int64, body string) parley.Message {
	t.Helper()
	m, _, err := s.Send(context.Background(), parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: body, ReplyTo: to})
	if err != nil {
		t.Fatalf("Send(%q, reply to %d) error = %v", body, to, err)
	}
	return m
}

func replyOf(m parley.Message) string {
	if m.ReplyTo == nil {
		return "none"
	}
	return fmt.Sprintf("%d %s %q", m.ReplyTo.Seq, m.ReplyTo.SenderName, m.ReplyTo.Excerpt)
}

// testThread: replies carry their root, a reply to a reply joins the
// root's thread, the root's summary moves with each reply (a change of
// the root, with its event), the thread pages on its own, and a repeated
// client_id stores nothing new.
func testThread(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	alice, bob, carol := MustCreateUser(t, s, "alice"), MustCreateUser(t, s, "bob"), MustCreateUser(t, s, "carol")
	room := MustCreateRoom(t, s, alice, "threads", 0)
	MustJoin(t, s, room, bob)
	MustJoin(t, s, room, carol)
	root := MustSend(t, s, room, alice, "shall we meet on friday?")
	MustSend(t, s, room, carol, "unrelated")
	if _, err := s.Messages(ctx, room.ID, parley.Newest(10)); err != nil { // warm the caches
		t.Fatal(err)
	}
	mark := rec.Len()
	r1 := MustReply(t, s, room, bob, root.Seq, "yes")
	if replyOf(r1) != `1 alice "shall we meet on friday?"` || r1.Seq != 3 {
		t.Errorf("reply = seq %d, reply_to %s; want seq 3 replying to 1 alice", r1.Seq, replyOf(r1))
	}
	r2 := MustReply(t, s, room, carol, r1.Seq, "me too") // a reply to a reply joins the root's thread
	if replyOf(r2) != `1 alice "shall we meet on friday?"` {
		t.Errorf("reply to a reply = reply_to %s, want the root 1", replyOf(r2))
	}
	r3, _, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: bob.ID, SenderName: bob.Name, Body: "see you", ReplyTo: root.Seq, ClientID: "k1"})
	if err != nil {
		t.Fatal(err)
	}
	again, created, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: bob.ID, SenderName: bob.Name, Body: "see you", ReplyTo: root.Seq, ClientID: "k1"})
	if err != nil || created || again.Seq != r3.Seq {
		t.Errorf("repeated reply = seq %d created %v, %v; want seq %d, not created", again.Seq, created, err, r3.Seq)
	}

	page, err := s.Messages(ctx, room.ID, parley.Newest(10))
	if err != nil || len(page) != 5 {
		t.Fatalf("Messages() = %d, %v; want 5", len(page), err)
	}
	got := page[4] // the root, newest first
	if got.Seq != root.Seq || got.Thread == nil || got.Thread.Replies != 3 || !slices.Equal(got.Thread.Participants, []string{bob.ID, carol.ID}) ||
		!got.Thread.LastReplyAt.Equal(r3.SentAt) || got.Change != 3 {
		t.Errorf("root = %+v thread %+v; want 3 replies by bob then carol, the last at %v, change 3", got, got.Thread, r3.SentAt)
	}
	if replyOf(page[0]) != `1 alice "shall we meet on friday?"` || page[3].ReplyTo != nil {
		t.Errorf("page replies = %s / %s, want the reply and no reply", replyOf(page[0]), replyOf(page[3]))
	}
	replies, err := s.Replies(ctx, room.ID, root.Seq, 0, 10)
	if err != nil || !slices.Equal(seqsOf(replies), []int64{3, 4, 5}) {
		t.Errorf("Replies(0) = %v, %v; want 3 4 5", seqsOf(replies), err)
	}
	if replies, _ := s.Replies(ctx, room.ID, root.Seq, 3, 1); !slices.Equal(seqsOf(replies), []int64{4}) {
		t.Errorf("Replies(after 3, limit 1) = %v, want 4", seqsOf(replies))
	}
	if replies, err := s.Replies(ctx, room.ID, 2, 0, 10); err != nil || len(replies) != 0 {
		t.Errorf("Replies(no thread) = %v, %v; want none", seqsOf(replies), err)
	}
	_, err = s.Replies(ctx, room.ID, 99, 0, 10)
	wantCode(t, "Replies(unknown seq)", err, parley.CodeNotFound)
	changed, err := s.Changed(ctx, room.ID, 0, 10)
	if err != nil || len(changed) != 1 || changed[0].Seq != root.Seq || changed[0].Thread == nil || changed[0].Thread.Replies != 3 {
		t.Errorf("Changed(0) = %+v, %v; want the root with 3 replies", changed, err)
	}
	var kinds []string
	for _, e := range rec.Events()[mark:] {
		switch e.Kind {
		case parley.EventMessage:
			kinds = append(kinds, fmt.Sprintf("message %d reply to %s", e.Message.Seq, replyOf(e.Message)))
		case parley.EventThread:
			kinds = append(kinds, fmt.Sprintf("thread %d: %d replies, change %d", e.Message.Seq, e.Message.Thread.Replies, e.Message.Change))
		}
	}
	q := `1 alice "shall we meet on friday?"`
	want := []string{"message 3 reply to " + q, "thread 1: 1 replies, change 1", "message 4 reply to " + q, "thread 1: 2 replies, change 2",
		"message 5 reply to " + q, "thread 1: 3 replies, change 3"}
	if !slices.Equal(kinds, want) {
		t.Errorf("events = %q, want %q", kinds, want)
	}
}

// testReplyRefused: a reply to a seq that is no message of the room (an
// unknown one, another room's, a future one) is CodeInvalid, to a deleted
// message CodeConflict; neither stores anything.
func testReplyRefused(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	alice := MustCreateUser(t, s, "alice")
	room := MustCreateRoom(t, s, alice, "here", 0)
	other := MustCreateRoom(t, s, alice, "there", 0)
	for range 3 {
		MustSend(t, s, other, alice, "elsewhere")
	}
	MustSend(t, s, room, alice, "one")
	MustSend(t, s, room, alice, "two")
	MustDelete(t, s, room, alice, 2)
	for _, tc := range []struct {
		name string
		to   int64
		code string
	}{
		{"future seq", 3, parley.CodeInvalid},
		{"another room's seq", 3, parley.CodeInvalid},
		{"deleted", 2, parley.CodeConflict},
	} {
		_, _, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: alice.ID, SenderName: alice.Name, Body: "x", ReplyTo: tc.to})
		wantCode(t, "Send(reply to "+tc.name+")", err, tc.code)
	}
	if r, _ := s.Room(ctx, room.ID); r.LastSeq != 2 || r.LastChange != 1 {
		t.Errorf("room = last_seq %d, last_change %d; want 2 and 1: nothing stored", r.LastSeq, r.LastChange)
	}
}

// testReplyExcerpt: the excerpt is the root's first MaxExcerpt characters,
// kept right on every read path when the root is edited and deleted; a
// thread goes on under a deleted root.
func testReplyExcerpt(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	alice, bob := MustCreateUser(t, s, "alice"), MustCreateUser(t, s, "bob")
	room := MustCreateRoom(t, s, alice, "quotes", 0)
	MustJoin(t, s, room, bob)
	long := ""
	for len([]rune(long)) < parley.MaxExcerpt+20 {
		long += "é🙂 "
	}
	root := MustSend(t, s, room, alice, long)
	r1 := MustReply(t, s, room, bob, root.Seq, "a reply")
	if want := string([]rune(long)[:parley.MaxExcerpt]); r1.ReplyTo == nil || r1.ReplyTo.Excerpt != want {
		t.Fatalf("excerpt = %s, want the first %d characters", replyOf(r1), parley.MaxExcerpt)
	}
	read := func(step, want string) {
		t.Helper()
		page, err := s.Messages(ctx, room.ID, parley.Newest(10))
		i := slices.IndexFunc(page, func(m parley.Message) bool { return m.Seq == r1.Seq })
		if err != nil || i < 0 || page[i].ReplyTo == nil || page[i].ReplyTo.Excerpt != want {
			t.Errorf("%s: newest page's reply = %+v, %v; want excerpt %q", step, page, err, want)
		}
		thread, err := s.Replies(ctx, room.ID, root.Seq, 0, 10)
		if err != nil || len(thread) == 0 || thread[0].ReplyTo == nil || thread[0].ReplyTo.Excerpt != want {
			t.Errorf("%s: thread = %+v, %v; want excerpt %q", step, thread, err, want)
		}
		if older, err := s.Messages(ctx, room.ID, parley.Page{Before: r1.Seq + 1, After: -1, Limit: 1}); err != nil || len(older) != 1 || older[0].ReplyTo == nil || older[0].ReplyTo.Excerpt != want {
			t.Errorf("%s: page before = %+v, %v; want excerpt %q", step, older, err, want)
		}
	}
	read("before the edit", string([]rune(long)[:parley.MaxExcerpt]))
	MustEdit(t, s, room, alice, root.Seq, "friday it is")
	read("after the edit", "friday it is")
	keyed, _, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: bob.ID, SenderName: bob.Name, Body: "keyed", ReplyTo: root.Seq, ClientID: "k"})
	if err != nil {
		t.Fatal(err)
	}
	MustDelete(t, s, room, alice, root.Seq)
	read("after the deletion", "")
	// A repeat of a reply's client_id gets the stored reply, though its
	// root is deleted since.
	if again, created, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: bob.ID, SenderName: bob.Name, Body: "keyed", ReplyTo: root.Seq, ClientID: "k"}); err != nil || created || again.Seq != keyed.Seq {
		t.Errorf("repeated reply after its root's deletion = seq %d created %v, %v; want seq %d, not created", again.Seq, created, err, keyed.Seq)
	}
	r2 := MustReply(t, s, room, bob, r1.Seq, "still talking") // a reply to a reply of a deleted root
	if replyOf(r2) != `1 alice ""` {
		t.Errorf("reply under a deleted root = %s, want 1 alice \"\"", replyOf(r2))
	}
}
