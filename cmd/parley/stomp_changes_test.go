package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"parley"
	"parley/stomp"
)

// nextChange reads frames until an edited or deleted event, failing on an
// ERROR or after 15 s.
func nextChange(t *testing.T, sc *stompClient) (*stomp.Frame, parley.Message) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		f := sc.read()
		if f.Command == stomp.Error {
			t.Fatalf("got %v, want an edited or deleted event", f)
		}
		if ev := string(f.Get("event")); f.Command == stomp.Message && (ev == "edited" || ev == "deleted") {
			var m parley.Message
			if err := json.Unmarshal(f.Body, &m); err != nil {
				t.Fatalf("event body %q: %v", f.Body, err)
			}
			return f, m
		}
	}
	t.Fatal("no edited or deleted event within 15 s")
	return nil, parley.Message{}
}

// TestStompChanges: over the real store (SQLite), an edit and a deletion
// sent over STOMP are receipted with their change and reach the other
// member's events subscription; reconnecting with since-change gets the
// changes it missed, then live ones.
func TestStompChanges(t *testing.T) {
	m := MustOpenMain(t)
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	bob, _ := mustSignUp(t, m.Addr(), "bob")
	var r room
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "changes"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: %d", st)
	}
	a := dialStomp(t, m, "websocket", alice.token)
	dest := "destination:/app/rooms." + r.ID + "\n"
	for _, body := range []string{"one", "two"} {
		a.send("SEND\n" + dest + "receipt:m\n\n" + body + "\x00")
		a.expect("RECEIPT", "receipt-id:m")
	}
	sc := subscribeEvents(t, m, bob.token, r.ID, false)
	a.send("SEND\n" + dest + "edit-seq:1\nreceipt:e\n\none, edited\x00")
	a.expect("RECEIPT", "receipt-id:e", "seq:1", "change:1")
	f, msg := nextChange(t, sc)
	if string(f.Get("event")) != "edited" || string(f.Get("change")) != "1" || msg.Body != "one, edited" || msg.EditedAt == nil {
		t.Fatalf("got %v %+v, want message 1 edited at change 1", f, msg)
	}
	sc.conn.Close()

	// While bob is away: message 2 edited, message 1 deleted.
	a.send("SEND\n" + dest + "edit-seq:2\nreceipt:e\n\ntwo, edited\x00")
	a.expect("RECEIPT", "receipt-id:e", "change:2")
	a.send("SEND\n" + dest + "delete-seq:1\nreceipt:d\n\n\x00")
	a.expect("RECEIPT", "receipt-id:d", "seq:1", "change:3")
	// bob may not edit alice's message: ERROR forbidden, from the store.
	b := dialStomp(t, m, "websocket", bob.token)
	b.send("SEND\n" + dest + "edit-seq:2\nreceipt:x\n\nmine now\x00")
	b.expect("ERROR", "message:forbidden", "receipt-id:x")

	sc = dialStomp(t, m, "websocket", bob.token)
	sc.send("SUBSCRIBE\nid:ev\ndestination:/topic/rooms." + r.ID + ".events\nsince-change:1\nreceipt:ev\n\n\x00")
	expectPast(t, sc, "RECEIPT", "receipt-id:ev")
	f, msg = nextChange(t, sc)
	if string(f.Get("event")) != "edited" || string(f.Get("change")) != "2" || msg.Seq != 2 || msg.Body != "two, edited" {
		t.Fatalf("first replayed %v %+v, want message 2 edited at change 2", f, msg)
	}
	f, msg = nextChange(t, sc)
	if string(f.Get("event")) != "deleted" || string(f.Get("change")) != "3" || msg.Seq != 1 || msg.Body != "" || msg.DeletedAt == nil {
		t.Fatalf("second replayed %v %+v, want message 1 deleted at change 3", f, msg)
	}
	a.send("SEND\n" + dest + "edit-seq:2\nreceipt:e\n\ntwo, again\x00")
	a.expect("RECEIPT", "receipt-id:e", "change:4")
	if f, msg = nextChange(t, sc); string(f.Get("change")) != "4" || msg.Body != "two, again" {
		t.Fatalf("live after the replay: %v %+v, want change 4", f, msg)
	}
}

// TestClusterStompChanges: an edit sent over STOMP on node 1 reaches an
// events subscriber on node 3, and one on node 2 resuming with
// since-change reads it from the shared store.
func TestClusterStompChanges(t *testing.T) {
	env := needCluster(t)
	nodes := []*Main{startNode(t, env, "one"), startNode(t, env, "two"), startNode(t, env, "three")}
	r, ms := groupRoom(t, nodes, "schg", 3)
	alice, carol := ms[0], ms[2] // on nodes one and three
	sc := subscribeEvents(t, nodes[2], carol.c.token, r.ID, false)
	a := dialStomp(t, nodes[0], "websocket", alice.c.token)
	dest := "destination:/app/rooms." + r.ID + "\n"
	a.send("SEND\n" + dest + "receipt:m\n\nhello\x00")
	a.expect("RECEIPT", "receipt-id:m", "seq:1")
	a.send("SEND\n" + dest + "edit-seq:1\nreceipt:e\n\nhello, edited\x00")
	a.expect("RECEIPT", "receipt-id:e", "change:1")
	f, msg := nextChange(t, sc)
	if string(f.Get("event")) != "edited" || string(f.Get("change")) != "1" || msg.Body != "hello, edited" {
		t.Fatalf("node three got %v %+v, want the edit", f, msg)
	}
	bob := ms[1]
	sb := dialStomp(t, nodes[1], "websocket", bob.c.token)
	sb.send("SUBSCRIBE\nid:ev\ndestination:/topic/rooms." + r.ID + ".events\nsince-change:0\nreceipt:ev\n\n\x00")
	expectPast(t, sb, "RECEIPT", "receipt-id:ev")
	if f, msg = nextChange(t, sb); string(f.Get("change")) != "1" || msg.Body != "hello, edited" {
		t.Fatalf("node two's replay: %v %+v", f, msg)
	}
}

// TestStompChangeClientID: over the real store (SQLite), an edit resent
// with the same client-id after a reconnect (the RECEIPT lost) is
// receipted again with the same change and makes no second edit: the other
// member's events subscription sees it once. REST shares the key (the same
// user and room); the key reused for another change is refused on both.
func TestStompChangeClientID(t *testing.T) {
	m := MustOpenMain(t, noSendLimit)
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	bob, _ := mustSignUp(t, m.Addr(), "bob")
	var r room
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "keys"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: %d", st)
	}
	a := dialStomp(t, m, "websocket", alice.token)
	dest := "destination:/app/rooms." + r.ID + "\n"
	for _, body := range []string{"one", "two"} {
		a.send("SEND\n" + dest + "receipt:m\n\n" + body + "\x00")
		a.expect("RECEIPT", "receipt-id:m")
	}
	sc := subscribeEvents(t, m, bob.token, r.ID, false)
	edit := "SEND\n" + dest + "edit-seq:1\nclient-id:e1\nreceipt:e\n\none, edited\x00"
	a.send(edit)
	first := a.expect("RECEIPT", "receipt-id:e", "seq:1", "change:1")
	a.conn.Close() // the client never saw that RECEIPT: it reconnects and resends
	a = dialStomp(t, m, "websocket", alice.token)
	a.send(edit)
	a.expect("RECEIPT", "receipt-id:e", "seq:1", "change:1", "message-id:"+string(first.Get("message-id")))
	var got changedMessage
	if st := alice.do("PATCH", "/api/rooms/"+r.ID+"/messages/1", map[string]string{"body": "one, edited", "client_id": "e1"}, &got); st != http.StatusOK || got.Change != 1 {
		t.Errorf("PATCH with client_id e1 = %d %+v, want 200 at change 1", st, got)
	}
	// Another change: bob's next event after change 1 is change 2.
	a.send("SEND\n" + dest + "delete-seq:2\nclient-id:d1\nreceipt:d\n\n\x00")
	a.expect("RECEIPT", "receipt-id:d", "seq:2", "change:2")
	if st := alice.do("DELETE", "/api/rooms/"+r.ID+"/messages/2", map[string]string{"client_id": "d1"}, nil); st != http.StatusNoContent {
		t.Errorf("DELETE with client_id d1 = %d, want 204", st)
	}
	for i, want := range []string{"edited", "deleted"} {
		f, msg := nextChange(t, sc)
		if string(f.Get("event")) != want || msg.Change != int64(i+1) {
			t.Fatalf("change event %d: %v %+v, want %s at change %d", i+1, f, msg, want, i+1)
		}
	}
	// The keys reused for other changes: REST 409, STOMP ERROR conflict.
	if st := alice.do("PATCH", "/api/rooms/"+r.ID+"/messages/1", map[string]string{"body": "one, again", "client_id": "e1"}, nil); st != http.StatusConflict {
		t.Errorf("PATCH with client_id e1 and another body = %d, want 409", st)
	}
	a.send("SEND\n" + dest + "delete-seq:1\nclient-id:e1\nreceipt:x\n\n\x00")
	a.expect("ERROR", "message:conflict", "receipt-id:x")
	var rm struct {
		LastChange int64 `json:"last_change"`
	}
	if st := alice.do("GET", "/api/rooms/"+r.ID, nil, &rm); st != http.StatusOK || rm.LastChange != 2 {
		t.Errorf("room = %d last_change %d, want 2", st, rm.LastChange)
	}
}

// TestClusterStompChangeClientID: a keyed edit on node 1 resent through
// node 2 (the client reconnected elsewhere) is receipted with the same
// change; the subscriber on node 3 sees it once.
func TestClusterStompChangeClientID(t *testing.T) {
	env := needCluster(t)
	nodes := []*Main{startNode(t, env, "one"), startNode(t, env, "two"), startNode(t, env, "three")}
	r, ms := groupRoom(t, nodes, "skey", 3)
	alice, carol := ms[0], ms[2]
	sc := subscribeEvents(t, nodes[2], carol.c.token, r.ID, false)
	dest := "destination:/app/rooms." + r.ID + "\n"
	a := dialStomp(t, nodes[0], "websocket", alice.c.token)
	a.send("SEND\n" + dest + "receipt:m\n\nhello\x00")
	a.expect("RECEIPT", "receipt-id:m", "seq:1")
	edit := "SEND\n" + dest + "edit-seq:1\nclient-id:e1\nreceipt:e\n\nhello, edited\x00"
	a.send(edit)
	a.expect("RECEIPT", "receipt-id:e", "change:1")
	b := dialStomp(t, nodes[1], "websocket", alice.c.token)
	b.send(edit)
	b.expect("RECEIPT", "receipt-id:e", "seq:1", "change:1")
	b.send("SEND\n" + dest + "edit-seq:1\nreceipt:e2\n\nhello, twice\x00")
	b.expect("RECEIPT", "receipt-id:e2", "change:2")
	// Changes 1 and 2 were committed on two nodes and reach node three
	// on two paths, in either order (cluster/edits.go: a change carries
	// its number, and a receiver keeps the newest): each once.
	var got []int64
	for range 2 {
		f, msg := nextChange(t, sc)
		if string(f.Get("change")) != fmt.Sprint(msg.Change) {
			t.Fatalf("node three's change event %v: header and body disagree", f)
		}
		got = append(got, msg.Change)
	}
	slices.Sort(got)
	if !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("node three's change events: changes %v, want 1 and 2 once each", got)
	}
}
