package main

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"parley/parleytest"
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

// TestPresenceChurn opens and closes 1,000 STOMP connections of 10 users
// at about 200 a second and counts what it cost: no store commit at all
// (presence lives in memory), and online/offline events bounded by the
// quiet period, not by the connections: at most two per user.
func TestPresenceChurn(t *testing.T) {
	m := MustOpenMain(t, oneAddress)
	var tokens []string
	for i := range 10 {
		c, _ := mustSignUp(t, m.Addr(), fmt.Sprint("churn", i))
		tokens = append(tokens, c.token)
	}
	watcher, _ := mustSignUp(t, m.Addr(), "watcher")
	var r room
	if st := watcher.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "churn"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	for _, tok := range tokens {
		c := &client{t: t, base: "http://" + m.Addr(), token: tok}
		if st := c.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
			t.Fatalf("join: %d", st)
		}
	}
	sc := subscribeEvents(t, m, watcher.token, r.ID, false)
	commits := metric(t, m, "parley_store_batch_size_count")
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for i := range 1000 {
		<-tick.C
		c := dialStomp(t, m, "websocket", tokens[i%len(tokens)])
		c.conn.Close()
	}
	if got := metric(t, m, "parley_store_batch_size_count"); got != commits {
		t.Errorf("%v store commits for 1,000 connections, want none", got-commits)
	}
	// Every user's quiet period ends 5 s after their last close: read what
	// the watcher got until then, plus a margin.
	sc.conn.SetReadDeadline(time.Now().Add(7 * time.Second))
	events := 0
	for {
		f, err := sc.r.Read()
		if err != nil {
			break
		}
		if ev := string(f.Get("event")); ev == "online" || ev == "offline" {
			events++
		}
	}
	announced := metric(t, m, `parley_room_events_total{kind="online"}`) + metric(t, m, `parley_room_events_total{kind="offline"}`)
	t.Logf("1,000 connections of 10 users: %d presence events to the watcher, %.0f announced", events, announced)
	if events > 2*len(tokens) {
		t.Errorf("%d presence events for 10 users, want at most 20", events)
	}
}

// TestTypingRoomCapFlag: with --typing-max-members 2, a room of three has
// no typing events (the signal is still receipted), a room of two has.
func TestTypingRoomCapFlag(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.TypingMaxMembers = 2 })
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	bob, bu := mustSignUp(t, m.Addr(), "bob")
	carol, _ := mustSignUp(t, m.Addr(), "carol")
	var small, big room
	for _, r := range []*room{&small, &big} {
		if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "typing"}, r); st != http.StatusCreated {
			t.Fatalf("create room: %d", st)
		}
		if st := bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
			t.Fatalf("join: %d", st)
		}
	}
	if st := carol.do("POST", "/api/rooms/"+big.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: %d", st)
	}
	sc := dialStomp(t, m, "websocket", alice.token) // every room of alice
	sc.send("SUBSCRIBE\nid:pe\ndestination:/user/queue/events\nreceipt:pe\n\n\x00")
	expectPast(t, sc, "RECEIPT", "receipt-id:pe")
	b := dialStomp(t, m, "websocket", bob.token)
	b.send("SEND\ndestination:/app/rooms." + big.ID + ".typing\nreceipt:t\n\n\x00")
	b.expect("RECEIPT", "receipt-id:t")
	parleytest.Eventually(t, 10*time.Second, func() bool { return metric(t, m, "parley_room_events_typing_capped_total") == 1 },
		"the typing signal in a room of 3 was never capped")
	b.send("SEND\ndestination:/app/rooms." + small.ID + ".typing\n\n\x00")
	if f := nextEvent(t, sc, "typing", bu.ID); string(f.Get("room")) != small.ID {
		t.Fatalf("typing event %v, want the small room's only", f)
	}
}
