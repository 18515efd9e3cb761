package gateway

import (
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"

	"parley"
	"parley/stomp"
)

// decodeMessage reads an edited or deleted event's body.
func decodeMessage(t *testing.T, body []byte) parley.Message {
	t.Helper()
	var m parley.Message
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatalf("event body %q: %v", body, err)
	}
	return m
}

// TestChangeSend: an edit and a deletion over STOMP are receipted after
// commit with seq, message-id and change, and reach the room's events
// subscribers and the personal events queue as edited and deleted events
// carrying the new version; plain room subscriptions get nothing of them.
func TestChangeSend(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
		e.chat.addRoom("r1", alice, bob)
		b := e.dial(t, tr)
		b.connect("bob")
		b.send(frame("SUBSCRIBE", "", "id:ev", "destination:/topic/rooms.r1.events", "receipt:s1"))
		b.expect("RECEIPT", "receipt-id:s1")
		b.send(frame("SUBSCRIBE", "", "id:all", "destination:/user/queue/events", "receipt:s2"))
		b.expect("RECEIPT", "receipt-id:s2")
		b.send(frame("SUBSCRIBE", "", "id:room", "destination:/topic/rooms.r1", "receipt:s3"))
		b.expect("RECEIPT", "receipt-id:s3")

		a := e.dial(t, tr)
		a.connect("alice")
		a.send(frame("SEND", "first", "destination:/app/rooms.r1", "receipt:m1"))
		a.expect("RECEIPT", "receipt-id:m1", "seq:1")
		// The message, and the sender's read position on both event
		// subscriptions, in no set order between the two paths.
		for range 3 {
			f := b.expect("MESSAGE", "seq:1")
			if ev := string(f.Get("event")); ev != "" && ev != "read" {
				t.Fatalf("got a %s event before any change", ev)
			}
		}
		a.send(frame("SEND", "first, edited", "destination:/app/rooms.r1", "edit-seq:1", "receipt:e1"))
		r := a.expect("RECEIPT", "receipt-id:e1", "seq:1", "change:1", "message-id")
		got := map[string]bool{}
		for range 2 {
			f := b.expect("MESSAGE", "event:edited", "change:1", "seq:1", "room:r1", "content-type:application/json")
			m := decodeMessage(t, f.Body)
			if m.Body != "first, edited" || m.EditedAt == nil || m.Change != 1 || m.Seq != 1 || m.ID != string(r.Get("message-id")) {
				t.Fatalf("edited event body %s", f.Body)
			}
			got[string(f.Get("subscription"))] = true
		}
		if !got["ev"] || !got["all"] {
			t.Fatalf("edited went to %v, want the room's events and the personal queue", got)
		}
		a.send(frame("SEND", "", "destination:/app/rooms.r1", "delete-seq:1", "receipt:d1"))
		a.expect("RECEIPT", "receipt-id:d1", "seq:1", "change:2")
		for range 2 {
			f := b.expect("MESSAGE", "event:deleted", "change:2", "seq:1")
			if m := decodeMessage(t, f.Body); m.Body != "" || m.DeletedAt == nil || m.Change != 2 {
				t.Fatalf("deleted event body %s", f.Body)
			}
		}
		// A second deletion changes nothing: the same change, no event.
		a.send(frame("SEND", "", "destination:/app/rooms.r1", "delete-seq:1", "receipt:d2"))
		a.expect("RECEIPT", "receipt-id:d2", "seq:1", "change:2")
		// The room topic carried chat messages only: the next frame there
		// is a new message.
		a.send(frame("SEND", "second", "destination:/app/rooms.r1", "receipt:m2"))
		a.expect("RECEIPT", "receipt-id:m2", "seq:2")
		b.expect("MESSAGE", "subscription:room", "seq:2")
	})
}

// nextChangeEvent reads frames up to the next edited or deleted event,
// skipping the others (read positions).
func nextChangeEvent(t *testing.T, c *client) *stomp.Frame {
	t.Helper()
	for {
		f, err := c.read()
		if err != nil {
			t.Fatalf("expecting a change event: %v", err)
		}
		if ev := string(f.Get("event")); f.Command == stomp.Message && (ev == "edited" || ev == "deleted") {
			return f
		}
		if f.Command != stomp.Message {
			t.Fatalf("got %v, want a change event", f)
		}
	}
}

// TestChangeSendClientID: a change resent with the same client-id (a
// client that lost the RECEIPT) gets a RECEIPT with the same seq, message-id
// and change, and the events subscribers see the change once; the
// client-id reused for another change is an ERROR conflict.
func TestChangeSendClientID(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
		e.chat.addRoom("r1", alice, bob)
		b := e.dial(t, tr)
		b.connect("bob")
		b.send(frame("SUBSCRIBE", "", "id:ev", "destination:/topic/rooms.r1.events", "receipt:s1"))
		b.expect("RECEIPT", "receipt-id:s1")
		a := e.dial(t, tr)
		a.connect("alice")
		for i := 1; i <= 2; i++ {
			a.send(frame("SEND", "m"+strconv.Itoa(i), "destination:/app/rooms.r1", "receipt:m"))
			a.expect("RECEIPT", "seq:"+strconv.Itoa(i))
		}
		edit := frame("SEND", "m1, edited", "destination:/app/rooms.r1", "edit-seq:1", "client-id:e1", "receipt:e")
		a.send(edit)
		first := a.expect("RECEIPT", "receipt-id:e", "seq:1", "change:1", "message-id")
		a.send(edit)
		a.expect("RECEIPT", "receipt-id:e", "seq:1", "change:1", "message-id:"+string(first.Get("message-id")))
		del := frame("SEND", "", "destination:/app/rooms.r1", "delete-seq:2", "client-id:d1", "receipt:d")
		a.send(del)
		a.expect("RECEIPT", "receipt-id:d", "seq:2", "change:2")
		a.send(del)
		a.expect("RECEIPT", "receipt-id:d", "seq:2", "change:2")
		// One event per change: after edited 1 and deleted 2 comes the
		// next change, not a repeat of either.
		a.send(frame("SEND", "m1, again", "destination:/app/rooms.r1", "edit-seq:1", "receipt:x"))
		a.expect("RECEIPT", "receipt-id:x", "change:3")
		for i, want := range []string{"edited", "deleted", "edited"} {
			f := nextChangeEvent(t, b)
			if m := decodeMessage(t, f.Body); string(f.Get("event")) != want || string(f.Get("change")) != strconv.Itoa(i+1) || m.Change != int64(i+1) {
				t.Fatalf("change event %d: %v, want %s at change %d", i+1, f, want, i+1)
			}
		}
		// The same client-id after a later change: the message as it is
		// now, no new change.
		a.send(edit)
		a.expect("RECEIPT", "receipt-id:e", "seq:1", "change:3")
		// The client-id reused for another change.
		for _, f := range []string{
			frame("SEND", "other text", "destination:/app/rooms.r1", "edit-seq:1", "client-id:d1", "receipt:r"),
			frame("SEND", "", "destination:/app/rooms.r1", "delete-seq:1", "client-id:e1", "receipt:r"),
		} {
			c := e.dial(t, tr)
			c.connect("alice")
			c.send(f)
			c.expect("ERROR", "message:conflict", "receipt-id:r")
			c.expectClosed()
		}
		if got := e.chat.changes["r1"]; got != 3 {
			t.Errorf("room r1 has %d changes, want 3", got)
		}
	})
}

// TestChangeSendRefusals: each malformed or refused change is an ERROR
// with the service's code, naming the frame's receipt.
func TestChangeSendRefusals(t *testing.T) {
	e := newEnv(t, Config{})
	alice, bob, carol := e.chat.addUser("alice"), e.chat.addUser("bob"), e.chat.addUser("carol")
	e.chat.addRoom("r1", alice, bob, carol)
	e.chat.owners["r1"] = carol.ID
	a := e.dial(t, "websocket")
	a.connect("alice")
	for i := 1; i <= 2; i++ {
		a.send(frame("SEND", "m"+strconv.Itoa(i), "destination:/app/rooms.r1", "receipt:m"))
		a.expect("RECEIPT", "seq:"+strconv.Itoa(i))
	}
	a.send(frame("SEND", "", "destination:/app/rooms.r1", "delete-seq:2", "receipt:d"))
	a.expect("RECEIPT", "change:1")

	cases := []struct {
		user, body, want string
		headers          []string
	}{
		{"alice", "x", "invalid frame", []string{"edit-seq:1", "delete-seq:1"}},
		{"alice", "x", "invalid frame", []string{"edit-seq:one"}},
		{"alice", "x", "invalid frame", []string{"edit-seq:0"}},
		{"alice", "", "invalid frame", []string{"delete-seq:-1"}},
		{"alice", "x", "invalid frame", []string{"delete-seq:1"}}, // a body with delete-seq
		{"alice", "", "invalid frame", []string{"edit-seq:1"}},    // an empty edit
		{"alice", "x", "conflict", []string{"edit-seq:2"}},        // a deleted message
		{"alice", "x", "not found", []string{"edit-seq:9"}},       // no such seq
		{"bob", "x", "forbidden", []string{"edit-seq:1"}},         // not its sender
		{"bob", "", "forbidden", []string{"delete-seq:1"}},        // neither sender nor moderator
		{"dave", "x", "forbidden", []string{"edit-seq:1"}},        // not a member
		{"carol", "x", "forbidden", []string{"edit-seq:1"}},       // a moderator cannot edit
		{"alice", "x", "invalid frame", []string{"edit-seq:1", "transaction:t"}},
	}
	e.chat.addUser("dave")
	for _, c := range cases {
		t.Run(fmt.Sprint(c.user, c.headers, c.body), func(t *testing.T) {
			cl := e.dial(t, "websocket")
			cl.connect(c.user)
			cl.send(frame("SEND", c.body, append([]string{"destination:/app/rooms.r1", "receipt:x"}, c.headers...)...))
			cl.expect("ERROR", "message:"+c.want, "receipt-id:x")
			cl.expectClosed()
		})
	}
	// The owner may delete another's message.
	c := e.dial(t, "websocket")
	c.connect("carol")
	c.send(frame("SEND", "", "destination:/app/rooms.r1", "delete-seq:1", "receipt:d"))
	c.expect("RECEIPT", "receipt-id:d", "seq:1", "change:2")
}

// TestSinceChange: a room events subscription with since-change gets the
// changes after it from the store, in change order, then live ones.
func TestSinceChange(t *testing.T) {
	e := newEnv(t, Config{})
	alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
	e.chat.addRoom("r1", alice, bob)
	a := e.dial(t, "websocket")
	a.connect("alice")
	for i := 1; i <= 3; i++ {
		a.send(frame("SEND", "m"+strconv.Itoa(i), "destination:/app/rooms.r1", "receipt:m"))
		a.expect("RECEIPT", "seq:"+strconv.Itoa(i))
	}
	for _, f := range []string{"edit-seq:1", "edit-seq:2", "delete-seq:3", "edit-seq:1"} { // changes 1..4
		body := "v"
		if f == "delete-seq:3" {
			body = ""
		}
		a.send(frame("SEND", body, "destination:/app/rooms.r1", f, "receipt:c"))
		a.expect("RECEIPT", "receipt-id:c")
	}
	b := e.dial(t, "websocket")
	b.connect("bob")
	b.send(frame("SUBSCRIBE", "", "id:ev", "destination:/topic/rooms.r1.events", "since-change:1", "receipt:s"))
	b.expect("RECEIPT", "receipt-id:s")
	// Message 1's change 1 is superseded by change 4: it comes once, at 4.
	b.expect("MESSAGE", "event:edited", "change:2", "seq:2")
	b.expect("MESSAGE", "event:deleted", "change:3", "seq:3")
	b.expect("MESSAGE", "event:edited", "change:4", "seq:1")
	a.send(frame("SEND", "again", "destination:/app/rooms.r1", "edit-seq:2", "receipt:c"))
	a.expect("RECEIPT", "change:5")
	b.expect("MESSAGE", "event:edited", "change:5", "seq:2")

	// Refusals: on the personal queue, not a number, past the last change.
	for _, h := range []string{"destination:/user/queue/events\nsince-change:0", "destination:/topic/rooms.r1.events\nsince-change:x",
		"destination:/topic/rooms.r1.events\nsince-change:6"} {
		c := e.dial(t, "websocket")
		c.connect("bob")
		c.send(frame("SUBSCRIBE", "", "id:ev", h, "receipt:s"))
		c.expect("ERROR", "message:invalid frame", "receipt-id:s")
		c.expectClosed()
	}
	// A non-member gets ERROR forbidden and nothing of the room's changes.
	e.chat.addUser("carol")
	c := e.dial(t, "websocket")
	c.connect("carol")
	c.send(frame("SUBSCRIBE", "", "id:ev", "destination:/topic/rooms.r1.events", "since-change:0", "receipt:s"))
	c.expect("ERROR", "message:forbidden", "receipt-id:s")
	c.expectClosed()
}

// TestSinceChangeConcurrentEdits: edits committed while a since-change
// subscription replays over two pages (before, during and after its store
// reads) reach it with no gap and no duplicate: the changes come in
// strictly rising order, and each message's last event is its final
// version.
func TestSinceChangeConcurrentEdits(t *testing.T) {
	const msgs, racing = 150, 150
	e := newEnv(t, Config{})
	alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
	e.chat.addRoom("r1", alice, bob)
	ctx := t.Context()
	for range msgs {
		if _, _, err := e.chat.Send(ctx, alice, "r1", "m", ""); err != nil {
			t.Fatal(err)
		}
	}
	edit := func(seq int64) {
		if _, err := e.chat.EditMessage(ctx, alice, "r1", seq, "v", ""); err != nil {
			t.Error(err)
		}
	}
	for seq := range int64(msgs) { // changes 1..150, one per message: over a page
		edit(seq + 1)
	}
	// The first store read lets 20 edits in just before it reads, so
	// the replay's second page holds them; edits race with all of it.
	hooked := make(chan struct{})
	var once sync.Once
	e.chat.mu.Lock()
	e.chat.changedHook = func(string, int64) {
		once.Do(func() {
			for seq := range int64(20) {
				edit(seq + 1)
			}
			close(hooked)
		})
	}
	e.chat.mu.Unlock()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := range racing {
			edit(int64(i*7%msgs + 1))
		}
	}()
	b := e.dial(t, "websocket")
	b.connect("bob")
	b.send(frame("SUBSCRIBE", "", "id:ev", "destination:/topic/rooms.r1.events", "since-change:0", "receipt:s"))
	b.expect("RECEIPT", "receipt-id:s")
	wg.Wait()
	<-hooked
	e.chat.mu.Lock()
	last := e.chat.changes["r1"]
	final := map[int64]int64{}
	for _, m := range e.chat.msgs["r1"] {
		final[m.Seq] = m.Change
	}
	e.chat.mu.Unlock()
	// Alice's sends moved her read position: the events dispatcher may
	// handle them after bob subscribed, and then tells him with a read
	// event among the changes. Only the changes are checked.
	next := func(cmd string, headers ...string) *stomp.Frame {
		t.Helper()
		for {
			f, err := b.read()
			if err != nil {
				t.Fatalf("expecting %s: %v", cmd, err)
			}
			if f.Command != stomp.Message || string(f.Get("event")) != "read" {
				return b.check(f, cmd, headers...)
			}
		}
	}
	got := map[int64]int64{}
	var prev int64
	for prev < last {
		f := next("MESSAGE", "event:edited")
		c, _ := strconv.ParseInt(string(f.Get("change")), 10, 64)
		seq, _ := strconv.ParseInt(string(f.Get("seq")), 10, 64)
		if c <= prev {
			t.Fatalf("change %d after %d: a duplicate or out of order", c, prev)
		}
		prev, got[seq] = c, c
	}
	for seq, c := range final {
		if got[seq] != c {
			t.Fatalf("message %d: last event at change %d, its final change is %d (a gap)", seq, got[seq], c)
		}
	}
	// Nothing more: a receipt round trip comes next.
	b.send(frame("UNSUBSCRIBE", "", "id:ev", "receipt:u"))
	next("RECEIPT", "receipt-id:u")
}

// TestReplayMarksChanges: a since-seq replay delivers an edited message
// with headers change and edited-at, a tombstone with deleted: true,
// deleted-at and no body, and an unchanged message with none of these
// (design §3b "Replays say what they carry").
func TestReplayMarksChanges(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
		e.chat.addRoom("r1", alice, bob)
		a := e.dial(t, tr)
		a.connect("alice")
		for i, body := range []string{"one", "two", "three"} {
			a.send(frame("SEND", body, "destination:/app/rooms.r1", fmt.Sprint("receipt:m", i)))
			a.expect("RECEIPT", fmt.Sprint("receipt-id:m", i))
		}
		a.send(frame("SEND", "one, edited", "destination:/app/rooms.r1", "edit-seq:1", "receipt:e1"))
		a.expect("RECEIPT", "receipt-id:e1", "change:1")
		a.send(frame("SEND", "", "destination:/app/rooms.r1", "delete-seq:2", "receipt:d2"))
		a.expect("RECEIPT", "receipt-id:d2", "change:2")

		b := e.dial(t, tr)
		b.connect("bob")
		b.send(frame("SUBSCRIBE", "", "id:room", "destination:/topic/rooms.r1", "since-seq:0"))
		edited := b.expect("MESSAGE", "seq:1", "change:1", "edited-at")
		if string(edited.Body) != "one, edited" {
			t.Errorf("replayed edit body = %q", edited.Body)
		}
		if _, ok := edited.Lookup("deleted"); ok {
			t.Errorf("replayed edit has header deleted: %v", edited)
		}
		deleted := b.expect("MESSAGE", "seq:2", "change:2", "deleted:true", "deleted-at")
		if len(deleted.Body) != 0 {
			t.Errorf("replayed tombstone body = %q, want none", deleted.Body)
		}
		plain := b.expect("MESSAGE", "seq:3")
		for _, h := range []string{"change", "edited-at", "deleted", "deleted-at"} {
			if _, ok := plain.Lookup(h); ok {
				t.Errorf("unchanged message has header %s: %v", h, plain)
			}
		}
	})
}

// TestAPIKeyFrames: a session signed in with an API key may SUBSCRIBE
// only with the scope history and SEND only with post: the other frame
// is an ERROR forbidden.
func TestAPIKeyFrames(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		poster, reader := e.chat.addKey("poster", parley.ScopePost), e.chat.addKey("reader", parley.ScopeHistory)
		e.chat.addRoom("r1", poster, reader)

		r := e.dial(t, tr)
		r.connect("reader")
		r.send(frame("SUBSCRIBE", "", "id:room", "destination:/topic/rooms.r1", "receipt:s1"))
		r.expect("RECEIPT", "receipt-id:s1")
		p := e.dial(t, tr)
		p.connect("poster")
		p.send(frame("SEND", "deploy done", "destination:/app/rooms.r1", "receipt:m1"))
		p.expect("RECEIPT", "receipt-id:m1", "seq:1")
		r.expect("MESSAGE", "seq:1", "sender:u-poster")

		p.send(frame("SUBSCRIBE", "", "id:room", "destination:/topic/rooms.r1"))
		p.expect("ERROR", "code:forbidden")
		r.send(frame("SEND", "hi", "destination:/app/rooms.r1"))
		r.expect("ERROR", "code:forbidden")

		// A room-bound key (an incoming webhook's) names its room only.
		hook := e.chat.addKey("hook", parley.ScopePost, parley.ScopeHistory)
		e.chat.apiKeys["token-hook"].RoomID = "r1"
		e.chat.addRoom("r2", hook)
		e.chat.addRoom("r1", poster, reader, hook)
		h := e.dial(t, tr)
		h.connect("hook")
		h.send(frame("SEND", "in its room", "destination:/app/rooms.r1", "receipt:h1"))
		h.expect("RECEIPT", "receipt-id:h1")
		h.send(frame("SUBSCRIBE", "", "id:r2", "destination:/topic/rooms.r2.events"))
		h.expect("ERROR", "code:forbidden")
	})
}
