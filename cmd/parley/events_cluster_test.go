package main

import (
	"strings"
	"testing"
	"time"

	"parley"
	"parley/stomp"
)

// subscribeEvents opens a STOMP session of token on m subscribed to the
// room's events (and, with topic, to its messages as well).
func subscribeEvents(t *testing.T, m *Main, token, roomID string, topic bool) *stompClient {
	t.Helper()
	sc := dialStomp(t, m, "websocket", token)
	sc.send("SUBSCRIBE\nid:ev\ndestination:/topic/rooms." + roomID + ".events\nreceipt:ev\n\n\x00")
	expectPast(t, sc, "RECEIPT", "receipt-id:ev")
	if topic {
		sc.send("SUBSCRIBE\nid:msg\ndestination:/topic/rooms." + roomID + "\nreceipt:msg\n\n\x00")
		expectPast(t, sc, "RECEIPT", "receipt-id:msg")
	}
	return sc
}

// expectPast reads frames until one of command cmd with the header
// "name:value", skipping room events (the set-up's joins are still being
// announced).
func expectPast(t *testing.T, sc *stompClient, cmd, header string) *stomp.Frame {
	t.Helper()
	name, want, _ := strings.Cut(header, ":")
	for {
		f := sc.read()
		if f.Command == stomp.Message && f.Get("event") != nil {
			continue
		}
		if f.Command.String() != cmd || string(f.Get(name)) != want {
			t.Fatalf("got %v, want %s %s", f, cmd, header)
		}
		return f
	}
}

// nextEvent reads frames until a MESSAGE whose event header is kind about
// user (the others, such as the members' own online events, are
// skipped), failing after 15 s.
func nextEvent(t *testing.T, sc *stompClient, kind, user string) *stomp.Frame {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		f := sc.read()
		if f.Command == stomp.Message && string(f.Get("event")) == kind && string(f.Get("user")) == user {
			return f
		}
		if f.Command == stomp.Error {
			t.Fatalf("got %v, want a %s event", f, kind)
		}
	}
	t.Fatalf("no %s event within 15 s", kind)
	return nil
}

// commitOn reports events on node m as its store's commit callbacks do
// (the relay, then room events): how the moderation routes' removals will
// reach the fan-out.
func commitOn(m *Main, evs ...parley.Event) {
	m.cluster.relay.Apply(evs)
	m.events.Apply(evs)
}

// TestClusterRoomEvents: members on three nodes hear each other's typing
// and presence, and a removal ends the removed member's subscriptions on
// their node within a second, while the others hear of it.
func TestClusterRoomEvents(t *testing.T) {
	env := needCluster(t)
	// oneAddress: four logins from 127.0.0.1 at once, under a loaded CI
	// machine, once met a login limit (429); limits are not this test's.
	nodes := []*Main{startNode(t, env, "a", oneAddress), startNode(t, env, "b", oneAddress), startNode(t, env, "c", oneAddress)}
	r, ms := groupRoom(t, nodes, "events", 4)
	alice, bob, carol, dave := ms[0], ms[1], ms[2], ms[3] // on nodes a, b, c, a
	a := subscribeEvents(t, nodes[0], alice.c.token, r.ID, false)
	b := subscribeEvents(t, nodes[1], bob.c.token, r.ID, true)
	c := subscribeEvents(t, nodes[2], carol.c.token, r.ID, false)
	// bob has a second session, on node c, subscribed to the room.
	b2 := subscribeEvents(t, nodes[2], bob.c.token, r.ID, true)
	settle(t, env, append(spreadOver(nodes, ms[:3]), presentOn{nodes[2].Config.NodeID, ms[1:2]})...)

	// Typing on node a reaches nodes b and c, not the sender.
	a.send("SEND\ndestination:/app/rooms." + r.ID + ".typing\nreceipt:t\n\n\x00")
	expectPast(t, a, "RECEIPT", "receipt-id:t")
	for _, sc := range []*stompClient{b, c} {
		nextEvent(t, sc, "typing", alice.u.ID)
	}

	// dave comes online on node a: b and c announce it after the quiet
	// period; then offline.
	d := dialStomp(t, nodes[0], "websocket", dave.c.token)
	for _, sc := range []*stompClient{b, c} {
		nextEvent(t, sc, "online", dave.u.ID)
	}
	d.send("DISCONNECT\nreceipt:bye\n\n\x00")
	d.expect("RECEIPT", "receipt-id:bye")
	for _, sc := range []*stompClient{b, c} {
		nextEvent(t, sc, "offline", dave.u.ID)
	}
	seen, err := nodes[2].Seen(t.Context(), []string{dave.u.ID, alice.u.ID})
	if err != nil || seen[dave.u.ID].Online || seen[dave.u.ID].LastSeenAt.IsZero() || !seen[alice.u.ID].Online {
		t.Fatalf("seen from node c: %v, %v", seen, err)
	}

	// alice (node a) removes bob: his sessions on nodes b and c end with
	// ERROR within a second; carol (node c) hears of it.
	removed := time.Now()
	commitOn(nodes[0], parley.Event{Kind: parley.EventLeave, Room: parley.Room{ID: r.ID, Kind: parley.KindGroup, Title: "events", MemberCount: 3},
		UserID: bob.u.ID, Reason: parley.LeaveRemoved, ActorID: alice.u.ID})
	for i, sc := range []*stompClient{b, b2} {
		for {
			f := sc.read()
			if f.Command == stomp.Error {
				if string(f.Get("message")) != "forbidden" {
					t.Fatalf("got %v, want ERROR forbidden", f)
				}
				break
			}
		}
		if took := time.Since(removed); took > time.Second {
			t.Errorf("the removal took %v to end bob's session %d on another node, want under 1 s", took, i+1)
		}
		if f, err := sc.next(); err == nil {
			t.Errorf("bob's session %d got %v after the ERROR, want the close", i+1, f)
		}
	}
	f := nextEvent(t, c, "member", bob.u.ID)
	if string(f.Get("action")) != "removed" || string(f.Get("actor")) != alice.u.ID {
		t.Fatalf("member event %v, want bob removed by alice", f)
	}
	t.Logf("removal: both of bob's sessions ended and carol told within %v", time.Since(removed))
}
