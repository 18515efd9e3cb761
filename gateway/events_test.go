package gateway

import (
	"context"
	"encoding/json"
	"sort"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
	"parley/roomevents"
)

// Memberships serves roomevents.Events (presence events).
func (c *fakeChat) Memberships(ctx context.Context, userID string) ([]parley.Member, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []parley.Member
	for room, m := range c.members {
		if m[userID] {
			out = append(out, parley.Member{RoomID: room, UserID: userID})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RoomID < out[j].RoomID })
	return out, nil
}

// commit reports events as the store's OnCommit does.
func (c *fakeChat) commit(evs ...parley.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sink(evs)
}

// join adds u to a room and reports it.
func (c *fakeChat) join(roomID string, u parley.User) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.members[roomID][u.ID] = true
	c.sink([]parley.Event{{Kind: parley.EventJoin, Room: parley.Room{ID: roomID, Title: "room " + roomID, MemberCount: len(c.members[roomID])}, UserID: u.ID}})
}

// remove takes u out of a room as a moderator does (reason LeaveRemoved
// or LeaveBanned).
func (c *fakeChat) remove(roomID string, u parley.User, reason, actor string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.members[roomID], u.ID)
	c.sink([]parley.Event{{Kind: parley.EventLeave, Room: parley.Room{ID: roomID, MemberCount: len(c.members[roomID])}, UserID: u.ID, Reason: reason, ActorID: actor}})
}

// probe is an event receiver that signals each delivery.
type probe chan struct{}

func (p probe) DeliverEvents([]*roomevents.RoomEvent) {
	select {
	case p <- struct{}{}:
	default:
	}
}
func (probe) Evicted(string, string) {}
func (probe) Lagged()                {}

// settleEvents waits until the env's room events have handled everything
// queued so far: a room change queued now reaches a probe.
func (e *env) settleEvents(t *testing.T) {
	t.Helper()
	p := make(probe, 1)
	id := parley.NewID()
	sub := &roomevents.Sub{To: p, UserID: "probe", RoomID: "probe-" + id}
	e.events.Subscribe(sub)
	defer e.events.Unsubscribe(sub)
	e.events.Apply([]parley.Event{{Kind: parley.EventRoomInfo, Room: parley.Room{ID: "probe-" + id}}})
	select {
	case <-p:
	case <-time.After(10 * time.Second):
		t.Fatal("room events did not settle")
	}
}

// awaitPresenceCalls waits until the gateway has made n OnPresence calls.
func awaitPresenceCalls(t *testing.T, e *env, n int64) {
	t.Helper()
	if !parleytest.Poll(10*time.Second, func() bool { return e.presenceCalls.Load() >= n }) {
		t.Fatalf("%d presence changes, want %d", e.presenceCalls.Load(), n)
	}
}

func TestEventsSubscribeRefusals(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
		e.chat.addRoom("r1", alice)
		_ = bob
		// A non-member's events subscription is refused like a room's.
		c := e.dial(t, tr)
		c.connect("bob")
		c.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1.events", "receipt:s"))
		c.expect("ERROR", "message:forbidden", "receipt-id:s")
		c.expectClosed()
		// So is an unknown room's.
		c = e.dial(t, tr)
		c.connect("bob")
		c.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.nope.events"))
		c.expect("ERROR", "message:not found")
		c.expectClosed()
		// Typing from a non-member is refused like any SEND.
		c = e.dial(t, tr)
		c.connect("bob")
		c.send(frame("SEND", "", "destination:/app/rooms.r1.typing", "receipt:t"))
		c.expect("ERROR", "message:forbidden", "receipt-id:t")
		c.expectClosed()
		// A typing SEND has no body.
		c = e.dial(t, tr)
		c.connect("alice")
		c.send(frame("SEND", "hi", "destination:/app/rooms.r1.typing"))
		c.expect("ERROR", "message:invalid frame")
		c.expectClosed()
	})
}

func TestEventsTyping(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
		e.chat.addRoom("r1", alice, bob)
		a := e.dial(t, tr)
		a.connect("alice")
		a.send(frame("SUBSCRIBE", "", "id:ev", "destination:/topic/rooms.r1.events", "receipt:s"))
		a.expect("RECEIPT", "receipt-id:s")
		b := e.dial(t, tr)
		b.connect("bob")
		b.send(frame("SUBSCRIBE", "", "id:ev", "destination:/topic/rooms.r1.events", "receipt:s1"))
		b.expect("RECEIPT", "receipt-id:s1")
		b.send(frame("SUBSCRIBE", "", "id:all", "destination:/user/queue/events", "receipt:s2"))
		b.expect("RECEIPT", "receipt-id:s2")
		b.send(frame("SUBSCRIBE", "", "id:room", "destination:/topic/rooms.r1", "receipt:s3"))
		b.expect("RECEIPT", "receipt-id:s3")

		// Three signals in a row: one event; the others are absorbed,
		// not refused.
		for _, r := range []string{"t1", "t2", "t3"} {
			a.send(frame("SEND", "", "destination:/app/rooms.r1.typing", "receipt:"+r))
			a.expect("RECEIPT", "receipt-id:"+r)
		}
		e.settleEvents(t)
		e.clock.Advance(100 * time.Millisecond) // the typing batch's wait
		got := map[string]bool{}
		for range 2 {
			f := b.expect("MESSAGE", "event:typing", "user:"+alice.ID, "room:r1", "content-type:application/json")
			got[string(f.Get("subscription"))+" "+string(f.Get("destination"))] = true
		}
		if !got["ev /topic/rooms.r1.events"] || !got["all /user/queue/events"] {
			t.Fatalf("typing went to %v, want the room's events and the personal queue", got)
		}
		// Events never reach the room topic: a receipt round trip, and
		// nothing else came.
		e.settleEvents(t)
		b.send(frame("UNSUBSCRIBE", "", "id:room", "receipt:u"))
		b.expect("RECEIPT", "receipt-id:u")
		// After 2 s another signal goes out; the sender never hears its own.
		e.clock.Advance(1900 * time.Millisecond)
		a.send(frame("SEND", "", "destination:/app/rooms.r1.typing", "receipt:t4"))
		a.expect("RECEIPT", "receipt-id:t4")
		e.settleEvents(t)
		e.clock.Advance(100 * time.Millisecond)
		b.expect("MESSAGE", "event:typing")
		b.expect("MESSAGE", "event:typing")
		a.send(frame("UNSUBSCRIBE", "", "id:ev", "receipt:u"))
		a.expect("RECEIPT", "receipt-id:u")
	})
}

func TestEventsMember(t *testing.T) {
	e := newEnv(t, Config{})
	alice, bob, carol := e.chat.addUser("alice"), e.chat.addUser("bob"), e.chat.addUser("carol")
	e.chat.addRoom("r1", alice, bob)
	a := e.dial(t, "websocket")
	a.connect("alice")
	a.send(frame("SUBSCRIBE", "", "id:ev", "destination:/topic/rooms.r1.events", "ack:client-individual", "receipt:s"))
	a.expect("RECEIPT", "receipt-id:s")

	e.chat.join("r1", carol)
	f := a.expect("MESSAGE", "event:member", "action:joined", "user:"+carol.ID, "room:r1",
		"destination:/topic/rooms.r1.events", "subscription:ev", "ack", "message-id")
	var r parley.Room
	if err := json.Unmarshal(f.Body, &r); err != nil || r.ID != "r1" || r.MemberCount != 3 || r.Title != "room r1" {
		t.Fatalf("member event body %s: want the room's new info (3 seats taken)", f.Body)
	}
	e.chat.leave("r1", bob)
	a.expect("MESSAGE", "event:member", "action:left", "user:"+bob.ID)
	e.chat.commit(parley.Event{Kind: parley.EventRole, Room: parley.Room{ID: "r1"}, UserID: carol.ID, Role: parley.RoleAdmin, ActorID: alice.ID})
	a.expect("MESSAGE", "event:member", "action:role", "user:"+carol.ID, "role:admin", "actor:"+alice.ID)
	e.chat.commit(parley.Event{Kind: parley.EventRoomInfo, Room: parley.Room{ID: "r1", Title: "renamed", Capacity: 10}, ActorID: alice.ID})
	f = a.expect("MESSAGE", "event:member", "action:room", "user:"+alice.ID)
	if err := json.Unmarshal(f.Body, &r); err != nil || r.Title != "renamed" || r.Capacity != 10 {
		t.Fatalf("room event body %s", f.Body)
	}
	e.chat.remove("r1", carol, parley.LeaveBanned, alice.ID)
	a.expect("MESSAGE", "event:member", "action:banned", "user:"+carol.ID, "actor:"+alice.ID)
}

// TestEventsRemovalEndsSubscriptions checks that a removed member's live
// subscriptions to the room end at once with ERROR, the topic's and the
// events', while a plain leave drops them silently (TestLeaveStopsDelivery).
func TestEventsRemovalEndsSubscriptions(t *testing.T) {
	for _, dest := range []string{"/topic/rooms.r1", "/topic/rooms.r1.events"} {
		for _, reason := range []string{parley.LeaveRemoved, parley.LeaveBanned} {
			t.Run(dest+" "+reason, func(t *testing.T) {
				e := newEnv(t, Config{})
				alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
				e.chat.addRoom("r1", alice, bob)
				e.chat.addRoom("r2", alice, bob)
				b := e.dial(t, "tcp")
				b.connect("bob")
				b.send(frame("SUBSCRIBE", "", "id:0", "destination:"+dest, "receipt:s"))
				b.expect("RECEIPT", "receipt-id:s")
				e.chat.remove("r1", bob, reason, alice.ID)
				f := b.expect("ERROR", "message:forbidden", "code:forbidden")
				if want := "you were " + reason + " from room r1"; string(f.Body) != want {
					t.Errorf("ERROR body %q, want %q", f.Body, want)
				}
				b.expectClosed()
			})
		}
	}
}

func TestEventsRead(t *testing.T) {
	e := newEnv(t, Config{})
	alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
	e.chat.addRoom("r1", alice, bob)
	b := e.dial(t, "tcp")
	b.connect("bob")
	b.send(frame("SUBSCRIBE", "", "id:ev", "destination:/user/queue/events", "receipt:s"))
	b.expect("RECEIPT", "receipt-id:s")
	room := parley.Room{ID: "r1", MemberCount: 2}
	e.chat.commit(parley.Event{Kind: parley.EventRead, Room: room, UserID: alice.ID, ReadSeq: 7})
	b.expect("MESSAGE", "event:read", "user:"+alice.ID, "seq:7", "room:r1", "destination:/user/queue/events")
	// Within the second: held, then one event with every position.
	e.chat.commit(parley.Event{Kind: parley.EventRead, Room: room, UserID: alice.ID, ReadSeq: 8})
	e.chat.commit(parley.Event{Kind: parley.EventRead, Room: room, UserID: bob.ID, ReadSeq: 9})
	e.settleEvents(t)
	e.clock.Advance(time.Second)
	f := b.expect("MESSAGE", "event:read", "user:"+bob.ID, "seq:9")
	var body struct {
		Reads []parley.Read `json:"reads"`
	}
	if err := json.Unmarshal(f.Body, &body); err != nil || len(body.Reads) != 2 || body.Reads[0] != (parley.Read{UserID: alice.ID, Seq: 8}) {
		t.Fatalf("read body %s, want alice at 8 and bob at 9", f.Body)
	}
}

func TestEventsPresence(t *testing.T) {
	e := newEnv(t, Config{})
	alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
	e.chat.addRoom("r1", alice, bob)
	b := e.dial(t, "tcp")
	b.connect("bob")
	b.send(frame("SUBSCRIBE", "", "id:ev", "destination:/topic/rooms.r1.events", "receipt:s"))
	b.expect("RECEIPT", "receipt-id:s")
	// quiet lets the quiet period of the changes so far pass.
	quiet := func(changes int64) {
		awaitPresenceCalls(t, e, changes)
		e.settleEvents(t)
		e.clock.Advance(5 * time.Second)
	}
	quiet(1) // bob's own connect

	a := e.dial(t, "websocket")
	a.connect("alice")
	quiet(2)
	b.expect("MESSAGE", "event:online", "user:"+alice.ID, "room:r1")
	seen, _ := e.srv.Seen(t.Context(), []string{alice.ID, bob.ID, "nobody"})
	if !seen[alice.ID].Online || !seen[bob.ID].Online || seen["nobody"].Online {
		t.Fatalf("seen %v", seen)
	}
	// A reconnect within 5 s says nothing.
	a.send(frame("DISCONNECT", "", "receipt:bye"))
	a.expect("RECEIPT", "receipt-id:bye")
	a.expectClosed()
	awaitPresenceCalls(t, e, 3)
	e.clock.Advance(4 * time.Second)
	a = e.dial(t, "tcp")
	a.connect("alice")
	quiet(4)
	// Closing for good is offline, with when.
	a.send(frame("DISCONNECT", "", "receipt:bye"))
	a.expect("RECEIPT", "receipt-id:bye")
	a.expectClosed()
	quiet(5)
	f := b.expect("MESSAGE", "event:offline", "user:"+alice.ID) // no second online came first
	var body struct {
		Online     bool       `json:"online"`
		LastSeenAt *time.Time `json:"last_seen_at"`
	}
	if err := json.Unmarshal(f.Body, &body); err != nil || body.Online || body.LastSeenAt == nil {
		t.Fatalf("offline body %s", f.Body)
	}
	seen, _ = e.srv.Seen(t.Context(), []string{alice.ID})
	if seen[alice.ID].Online || seen[alice.ID].LastSeenAt.IsZero() {
		t.Fatalf("seen %v after the last close", seen)
	}
}
