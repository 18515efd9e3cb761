package main

import (
	"net/http"
	"testing"
)

// TestRoomEventsOneNode checks the wiring of room events on one node: a
// join, a PUT read, a send and a typing signal reach a member's events
// subscription through the real store and REST API.
func TestRoomEventsOneNode(t *testing.T) {
	m := MustOpenMain(t)
	alice, au := mustSignUp(t, m.Addr(), "alice")
	bob, bu := mustSignUp(t, m.Addr(), "bob")
	var r room
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "events"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	sc := subscribeEvents(t, m, alice.token, r.ID, false)
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: %d", st)
	}
	if f := nextEvent(t, sc, "member", bu.ID); string(f.Get("action")) != "joined" {
		t.Fatalf("got %v, want bob joined", f)
	}
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "hi"}, nil); st != http.StatusCreated {
		t.Fatalf("send: %d", st)
	}
	// bob's own send moves his read position: the first read of the room
	// goes out at once.
	if f := nextEvent(t, sc, "read", bu.ID); string(f.Get("seq")) != "1" {
		t.Fatalf("got %v, want bob's read at seq 1", f)
	}
	if st := alice.do("PUT", "/api/rooms/"+r.ID+"/read", map[string]int64{"seq": 1}, nil); st != http.StatusNoContent {
		t.Fatalf("read: %d", st)
	}
	if f := nextEvent(t, sc, "read", au.ID); string(f.Get("seq")) != "1" {
		t.Fatalf("got %v, want alice's read at seq 1 (after the window)", f)
	}
	b := dialStomp(t, m, "websocket", bob.token)
	b.send("SEND\ndestination:/app/rooms." + r.ID + ".typing\nreceipt:t\n\n\x00")
	b.expect("RECEIPT", "receipt-id:t")
	nextEvent(t, sc, "typing", bu.ID)
	nextEvent(t, sc, "online", bu.ID) // after the quiet period of 5 s
}
