package parleytest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"parley"
)

// kindName names an event kind in failure messages.
func kindName(k parley.EventKind) string {
	switch k {
	case parley.EventRoom:
		return "room"
	case parley.EventJoin:
		return "join"
	case parley.EventLeave:
		return "leave"
	case parley.EventRead:
		return "read"
	case parley.EventMessage:
		return "message"
	case parley.EventEdited:
		return "edited"
	case parley.EventDeleted:
		return "deleted"
	case parley.EventRoomInfo:
		return "room info"
	case parley.EventRole:
		return "role"
	case parley.EventUnban:
		return "unban"
	case parley.EventReaction:
		return "reaction"
	case parley.EventThread:
		return "thread"
	case parley.EventPin:
		return "pin"
	}
	return fmt.Sprintf("kind(%d)", k)
}

// testEvents: each committed change is reported once, in order, with the
// room as it stands after the change, before the write returns.
func testEvents(t *testing.T, newStore NewStoreFunc) {
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	ctx := context.Background()
	u, v := MustCreateUser(t, s, "u"), MustCreateUser(t, s, "v")

	// expect checks that the events since mark are exactly want.
	mark := rec.Len()
	expect := func(step string, want ...parley.Event) {
		t.Helper()
		got := rec.Events()[mark:]
		mark += len(got)
		if len(got) != len(want) {
			var kinds []string
			for _, e := range got {
				kinds = append(kinds, kindName(e.Kind)+" "+e.UserID)
			}
			t.Errorf("%s: %d events %v, want %d", step, len(got), kinds, len(want))
			return
		}
		for i, w := range want {
			g := got[i]
			if g.Kind != w.Kind || g.UserID != w.UserID || g.ReadSeq != w.ReadSeq || !sameRoom(g.Room, w.Room) ||
				g.Message.ID != w.Message.ID || g.Message.Seq != w.Message.Seq {
				t.Errorf("%s: event %d = %s user %s read %d room %s msg %s/%d, want %s user %s read %d room %s msg %s/%d",
					step, i, kindName(g.Kind), g.UserID, g.ReadSeq, roomString(g.Room), g.Message.ID, g.Message.Seq,
					kindName(w.Kind), w.UserID, w.ReadSeq, roomString(w.Room), w.Message.ID, w.Message.Seq)
			}
		}
	}

	room := MustCreateRoom(t, s, u, "events", 0)
	expect("CreateRoom", parley.Event{Kind: parley.EventRoom, Room: room},
		parley.Event{Kind: parley.EventJoin, Room: room, UserID: u.ID})

	m1, _, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: u.ID, SenderName: u.Name, Body: "one", ClientID: "k1"})
	if err != nil {
		t.Fatalf("Send() error = %v", err)
	}
	room = MustRoom(t, s, room.ID)
	expect("Send", parley.Event{Kind: parley.EventMessage, Room: room, UserID: u.ID, Message: m1})
	if e := rec.Events()[mark-1]; e.Room.LastSeq != e.Message.Seq || e.Message.Body != "one" || e.Message.RoomID != room.ID {
		t.Errorf("message event = room last_seq %d, message %+v, want last_seq = seq and the message", e.Room.LastSeq, e.Message)
	}
	s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: u.ID, SenderName: u.Name, Body: "one", ClientID: "k1"})
	expect("Send(repeat)")

	room, _, err = s.Join(ctx, room.ID, v.ID)
	if err != nil {
		t.Fatalf("Join() error = %v", err)
	}
	expect("Join", parley.Event{Kind: parley.EventJoin, Room: room, UserID: v.ID, ReadSeq: 1})
	s.Join(ctx, room.ID, v.ID)
	expect("Join(again)")

	m2 := MustSend(t, s, room, v, "two")
	room = MustRoom(t, s, room.ID)
	expect("Send(v)", parley.Event{Kind: parley.EventMessage, Room: room, UserID: v.ID, Message: m2})

	if _, err := s.MarkRead(ctx, room.ID, u.ID, 2); err != nil {
		t.Fatalf("MarkRead() error = %v", err)
	}
	expect("MarkRead", parley.Event{Kind: parley.EventRead, Room: room, UserID: u.ID, ReadSeq: 2})
	s.MarkRead(ctx, room.ID, u.ID, 1)
	expect("MarkRead(backwards)")

	room, err = s.Leave(ctx, room.ID, v.ID)
	if err != nil {
		t.Fatalf("Leave() error = %v", err)
	}
	expect("Leave", parley.Event{Kind: parley.EventLeave, Room: room, UserID: v.ID})
	s.Leave(ctx, room.ID, v.ID)
	expect("Leave(again)")

	_, _, err = s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: u.ID, PeerID: v.ID})
	if err != nil {
		t.Fatalf("CreateRoom(direct) error = %v", err)
	}
	got := rec.Events()[mark:]
	if len(got) != 3 || got[0].Kind != parley.EventRoom || got[1].Kind != parley.EventJoin || got[2].Kind != parley.EventJoin ||
		got[0].Room.MemberCount != 2 {
		t.Errorf("CreateRoom(direct) events = %d, want room, join, join with 2 members", len(got))
	}
	mark += len(got)
	s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: v.ID, PeerID: u.ID})
	expect("CreateRoom(direct again)")

	// Failed writes report nothing.
	s.Send(ctx, parley.NewMessage{RoomID: "no-such-room", SenderID: u.ID, SenderName: u.Name, Body: "x"})
	expect("Send(unknown room)")
}

// testConcurrentEvents: under concurrent writes, each room's messages are
// reported once each, in seq order, before the sends return.
func testConcurrentEvents(t *testing.T, newStore NewStoreFunc) {
	const nRooms, perRoom = 4, 100
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	ctx := context.Background()
	users := MustCreateUsers(t, s, "talker", 8)
	rooms := make([]parley.Room, nRooms)
	for i := range rooms {
		rooms[i] = MustCreateRoom(t, s, users[0], fmt.Sprintf("room%d", i), 0)
		for _, u := range users[1:] {
			MustJoin(t, s, rooms[i], u)
		}
	}

	sent := make(map[string]parley.Message)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range nRooms * perRoom {
		wg.Go(func() {
			r, u := rooms[i%nRooms], users[i%len(users)]
			m, _, err := s.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: fmt.Sprint(i)})
			if err != nil {
				t.Errorf("Send() error = %v", err)
				return
			}
			// The sink has run before Send returns.
			found := false
			for _, e := range rec.Events() {
				if e.Kind == parley.EventMessage && e.Message.ID == m.ID {
					found = true
					break
				}
			}
			if !found {
				t.Errorf("Send() returned %s/%d before its event", m.RoomID, m.Seq)
			}
			mu.Lock()
			sent[m.ID] = m
			mu.Unlock()
		})
	}
	wg.Wait()

	next := map[string]int64{} // room id → next seq expected
	seen := map[string]bool{}
	for _, e := range rec.Events() {
		if e.Kind != parley.EventMessage {
			continue
		}
		m := e.Message
		if seen[m.ID] {
			t.Errorf("message %s/%d reported twice", m.RoomID, m.Seq)
		}
		seen[m.ID] = true
		if want := next[m.RoomID] + 1; m.Seq != want {
			t.Errorf("event for %s has seq %d, want %d (seq order)", m.RoomID, m.Seq, want)
		}
		next[m.RoomID] = m.Seq
		if e.Room.ID != m.RoomID || e.Room.LastSeq != m.Seq || e.UserID != m.SenderID {
			t.Errorf("message event room %s last_seq %d user %s, want %s, %d, %s", e.Room.ID, e.Room.LastSeq, e.UserID, m.RoomID, m.Seq, m.SenderID)
		}
		if w, ok := sent[m.ID]; !ok || w.Seq != m.Seq || w.Body != m.Body {
			t.Errorf("event message %s/%d %q was not returned by Send", m.RoomID, m.Seq, m.Body)
		}
	}
	if len(seen) != len(sent) || len(sent) != nRooms*perRoom {
		t.Errorf("%d message events for %d sends, want %d", len(seen), len(sent), nRooms*perRoom)
	}
}
