package main

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"parley"
	"parley/stomp"
)

// mentionFrame is what a test keeps of a mention event: its headers,
// copied (the reader reuses frames).
type mentionFrame map[string]string

// nextMention reads frames until a mention event (other events and
// messages skipped), failing on an ERROR or after 15 s.
func nextMention(t *testing.T, sc *stompClient) mentionFrame {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		f := sc.read()
		if f.Command == stomp.Error {
			t.Fatalf("got %v, want a mention event", f)
		}
		if f.Command == stomp.Message && string(f.Get("event")) == "mention" {
			out := mentionFrame{"body": string(f.Body)}
			for _, h := range []string{"room", "seq", "sender", "sender-name", "excerpt", "destination"} {
				out[h] = string(f.Get(h))
			}
			return out
		}
	}
	t.Fatal("no mention event within 15 s")
	return nil
}

// userEvents opens a STOMP session of token on m subscribed to its
// personal event queue only.
func userEvents(t *testing.T, m *Main, token string) *stompClient {
	t.Helper()
	sc := dialStomp(t, m, "websocket", token)
	sc.send("SUBSCRIBE\nid:me\ndestination:/user/queue/events\nreceipt:me\n\n\x00")
	expectPast(t, sc, "RECEIPT", "receipt-id:me")
	return sc
}

// TestMentionsSTOMP: over the real node, a STOMP send resolves its
// mentions: the MESSAGE carries the mentions header, the mentioned member
// (subscribed to nothing but the personal queue) gets a mention event,
// the sender and unmentioned members none, a member at level none none;
// @room by a plain member is an ERROR and stores nothing.
func TestMentionsSTOMP(t *testing.T) {
	m := MustOpenMain(t)
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	bob, bu := mustSignUp(t, m.Addr(), "bob")
	carol, cu := mustSignUp(t, m.Addr(), "carol")
	var r room
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "mentions"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	for _, c := range []*client{bob, carol} {
		if st := c.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
			t.Fatalf("join: %d", st)
		}
	}
	be := userEvents(t, m, bob.token)
	ce := userEvents(t, m, carol.token)
	ae := userEvents(t, m, alice.token)

	// alice sends over STOMP, subscribed to the room: the MESSAGE says
	// whom it mentions; its RECEIPT and MESSAGE may come in either order.
	a := subscribe(t, m, alice.token, r.ID, -1)
	a.send("SEND\ndestination:/app/rooms." + r.ID + "\nreceipt:s1\n\nhi @bob, see\nthis\x00")
	var mentions string
	for got := 0; got < 2; got++ {
		f := a.read()
		switch f.Command {
		case stomp.Receipt:
		case stomp.Message:
			mentions = string(f.Get("mentions"))
		default:
			t.Fatalf("got %v, want the RECEIPT and the MESSAGE", f)
		}
	}
	if mentions != bu.ID {
		t.Errorf("MESSAGE mentions header = %q, want %q", mentions, bu.ID)
	}
	ev := nextMention(t, be)
	for h, want := range map[string]string{"room": r.ID, "seq": "1", "sender-name": "alice", "excerpt": "hi @bob, see this", "destination": "/user/queue/events"} {
		if ev[h] != want {
			t.Errorf("mention event header %s = %q, want %q", h, ev[h], want)
		}
	}
	if !strings.Contains(ev["body"], `"mentions":["`+bu.ID+`"]`) {
		t.Errorf("mention event body = %s, want the message with its mentions", ev["body"])
	}

	// bob turns mentions off: alice's next @bob tells nobody; carol's
	// first mention event is the marker after it, and alice's own is
	// bob's later @alice (the sender is never told).
	if st := bob.do("PUT", "/api/rooms/"+r.ID+"/notifications", map[string]string{"level": "none"}, nil); st != http.StatusOK {
		t.Fatalf("level none: %d", st)
	}
	for _, body := range []string{"quiet @bob", "@carol marker"} {
		if st := alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": body}, nil); st != http.StatusCreated {
			t.Fatalf("send %q: %d", body, st)
		}
	}
	if ev := nextMention(t, ce); ev["excerpt"] != "@carol marker" {
		t.Errorf("carol's first mention event = %v, want the marker", ev)
	}
	if st := bob.do("PUT", "/api/rooms/"+r.ID+"/notifications", map[string]string{"level": "all"}, nil); st != http.StatusOK {
		t.Fatalf("level all: %d", st)
	}
	if st := alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "loud @bob"}, nil); st != http.StatusCreated {
		t.Fatalf("send: %d", st)
	}
	if ev := nextMention(t, be); ev["excerpt"] != "loud @bob" {
		t.Errorf("bob's mention event after level none and back = %v, want \"loud @bob\" (none told nothing)", ev)
	}
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "thanks @alice"}, nil); st != http.StatusCreated {
		t.Fatalf("send: %d", st)
	}
	if ev := nextMention(t, ae); ev["excerpt"] != "thanks @alice" || ev["sender"] != bu.ID {
		t.Errorf("alice's first mention event = %v, want bob's thanks (never her own)", ev)
	}

	// @room by a plain member over STOMP: ERROR, nothing stored.
	b := dialStomp(t, m, "websocket", bob.token)
	b.send("SEND\ndestination:/app/rooms." + r.ID + "\nreceipt:x\n\n@room hello\x00")
	f := b.read()
	if f.Command != stomp.Error || !strings.Contains(string(f.Body)+string(f.Get("message")), "@room") {
		t.Errorf("@room by a member = %v, want an ERROR about @room", f)
	}
	var page struct{ Messages []parley.Message }
	carol.do("GET", "/api/rooms/"+r.ID+"/messages", nil, &page)
	if n := len(page.Messages); n != 5 {
		t.Errorf("history holds %d messages, want 5 (the refused @room stores nothing)", n)
	}
	var list struct {
		Rooms []struct {
			Mentions      int64  `json:"mentions"`
			Notifications string `json:"notifications"`
		} `json:"rooms"`
	}
	carol.do("GET", "/api/me/rooms", nil, &list)
	if len(list.Rooms) != 1 || list.Rooms[0].Mentions != 1 || list.Rooms[0].Notifications != "all" {
		t.Errorf("carol's room list = %+v, want 1 mention at level all", list.Rooms)
	}

	// An edit over STOMP re-resolves: carol, newly mentioned, is told and
	// counts it; bob, edited out, is not told again.
	a.send("SEND\ndestination:/app/rooms." + r.ID + "\nedit-seq:1\nreceipt:e1\n\nhi @carol, see this\x00")
	for { // past the room's messages and events that came since
		f := a.read()
		if f.Command == stomp.Receipt && string(f.Get("receipt-id")) == "e1" {
			break
		}
		if f.Command != stomp.Message {
			t.Fatalf("got %v, want the edit's RECEIPT", f)
		}
	}
	if ev := nextMention(t, ce); ev["seq"] != "1" || ev["excerpt"] != "hi @carol, see this" {
		t.Errorf("carol's mention event after the edit = %v, want seq 1's new text", ev)
	}
	carol.do("GET", "/api/me/rooms", nil, &list)
	if len(list.Rooms) != 1 || list.Rooms[0].Mentions != 2 {
		t.Errorf("carol's room list after the edit = %+v, want 2 mentions", list.Rooms)
	}
	carol.do("GET", "/api/rooms/"+r.ID+"/messages", nil, &page)
	for _, msg := range page.Messages {
		if msg.Seq == 1 && string(msg.Mentions) != cu.ID {
			t.Errorf("seq 1's mentions after the edit = %q, want carol's id", msg.Mentions)
		}
	}
}

// TestClusterMentions: the sender on node a, the mentioned member on node
// c, subscribed to nothing but the personal queue: the mention event and
// the count reach node c.
func TestClusterMentions(t *testing.T) {
	env := needCluster(t)
	nodes := []*Main{startNode(t, env, "a", oneAddress), startNode(t, env, "b", oneAddress), startNode(t, env, "c", oneAddress)}
	r, ms := groupRoom(t, nodes, "mention", 3)
	alice, bob, carol := ms[0], ms[1], ms[2] // on nodes a, b, c
	ce := userEvents(t, nodes[2], carol.c.token)
	be := userEvents(t, nodes[1], bob.c.token)
	settle(t, env, presentOn{nodes[1].Config.NodeID, ms[1:2]}, presentOn{nodes[2].Config.NodeID, ms[2:3]})

	body := "hello @" + carol.u.Name + " and @" + bob.u.Name
	if st := alice.c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": body}, nil); st != http.StatusCreated {
		t.Fatalf("send: %d", st)
	}
	for i, sc := range []*stompClient{ce, be} {
		ev := nextMention(t, sc)
		if ev["room"] != r.ID || ev["sender"] != alice.u.ID || ev["excerpt"] != body {
			t.Errorf("mention event on node %c = %v, want alice's message", "cb"[i], ev)
		}
	}
	var list struct {
		Rooms []struct {
			Mentions int64 `json:"mentions"`
		} `json:"rooms"`
	}
	carol.c.do("GET", "/api/me/rooms", nil, &list) // through node c
	if len(list.Rooms) != 1 || list.Rooms[0].Mentions != 1 {
		t.Errorf("carol's room list on node c = %+v, want 1 mention", list.Rooms)
	}

	// A level set on node b shows on node c's room list at once, and
	// a read on node b clears the count there too.
	var levels struct {
		Rooms []struct {
			Mentions      int64  `json:"mentions"`
			Notifications string `json:"notifications"`
		} `json:"rooms"`
	}
	bobOnC := &client{t: t, base: carol.c.base, token: bob.c.token}
	if st := bob.c.do("PUT", "/api/rooms/"+r.ID+"/notifications", map[string]string{"level": "mentions"}, nil); st != http.StatusOK {
		t.Fatalf("set bob's level on node b: %d", st)
	}
	bobOnC.do("GET", "/api/me/rooms", nil, &levels)
	if len(levels.Rooms) != 1 || levels.Rooms[0].Notifications != "mentions" || levels.Rooms[0].Mentions != 1 {
		t.Errorf("bob's room list on node c after he set his level on node b = %+v, want level mentions, 1 mention", levels.Rooms)
	}
	if st := bob.c.do("PUT", "/api/rooms/"+r.ID+"/read", map[string]int64{"seq": 1}, nil); st/100 != 2 {
		t.Fatalf("bob reads on node b: %d", st)
	}
	bobOnC.do("GET", "/api/me/rooms", nil, &levels)
	if len(levels.Rooms) != 1 || levels.Rooms[0].Mentions != 0 {
		t.Errorf("bob's room list on node c after he read on node b = %+v, want no mention", levels.Rooms)
	}
}
