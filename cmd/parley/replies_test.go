package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"parley"
	"parley/stomp"
)

// nextEventOf reads frames until an event of kind, failing on an ERROR or
// after 15 s.
func nextEventOf(t *testing.T, sc *stompClient, kind string) (*stomp.Frame, parley.Message) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		f := sc.read()
		if f.Command == stomp.Error {
			t.Fatalf("got %v, want a %s event", f, kind)
		}
		if f.Command == stomp.Message && string(f.Get("event")) == kind {
			var m parley.Message
			if err := json.Unmarshal(f.Body, &m); err != nil {
				t.Fatalf("event body %q: %v", f.Body, err)
			}
			return f, m
		}
	}
	t.Fatalf("no %s event within 15 s", kind)
	return nil, parley.Message{}
}

// TestReplies: over the real node (SQLite), replies by REST and STOMP: the
// reply's reply_to (REST) and reply-to headers (MESSAGE), a reply to a
// reply joining the root's thread, the root's thread summary with its live
// thread event, the thread paged on its own, the excerpt following the
// root's edit, and the refusals: a reply_to of another room's seq, of a
// future seq, of a deleted message, from a non-member.
func TestReplies(t *testing.T) {
	m := MustOpenMain(t)
	alice, au := mustSignUp(t, m.Addr(), "alice")
	bob, bu := mustSignUp(t, m.Addr(), "bob")
	mallory, _ := mustSignUp(t, m.Addr(), "mallory")
	var r, other room
	alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "threads"}, &r)
	mallory.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "elsewhere"}, &other)
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: %d", st)
	}
	for _, body := range []string{"lunch on friday?", "unrelated"} {
		alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": body}, nil)
	}
	for range 5 {
		mallory.do("POST", "/api/rooms/"+other.ID+"/messages", map[string]string{"body": "x"}, nil)
	}
	sc := subscribeEvents(t, m, alice.token, r.ID, true)

	var reply parley.Message
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "yes!", "reply_to": 1}, &reply); st != http.StatusCreated ||
		reply.ReplyTo == nil || reply.ReplyTo.Seq != 1 || reply.ReplyTo.SenderName != "alice" || reply.ReplyTo.Excerpt != "lunch on friday?" {
		t.Fatalf("reply = %d %+v, want 201 replying to 1", st, reply)
	}
	f, root := nextEventOf(t, sc, "thread")
	if string(f.Get("seq")) != "1" || string(f.Get("user")) != bu.ID || string(f.Get("replies")) != "1" || root.Thread == nil || root.Thread.Replies != 1 {
		t.Errorf("thread event = %v %+v, want root 1 with one reply by bob", f, root)
	}
	// A reply over STOMP, to the reply: it joins the root's thread, and
	// its MESSAGE names the root.
	a := dialStomp(t, m, "websocket", alice.token)
	dest := "destination:/app/rooms." + r.ID + "\n"
	a.send("SEND\n" + dest + "reply-to:3\nreceipt:r\n\nsee you there\x00")
	a.expect("RECEIPT", "receipt-id:r", "seq:4")
	// The reply's MESSAGE and the root's thread event come on two
	// subscriptions, in either order (and the reader reuses its frame:
	// what is needed is copied at once).
	var replyHeaders []string
	var evBody []byte
	for replyHeaders == nil || evBody == nil {
		f = sc.read()
		switch {
		case f.Command != stomp.Message:
		case string(f.Get("event")) == "thread":
			evBody = append([]byte(nil), f.Body...)
		case string(f.Get("seq")) == "4" && f.Get("event") == nil:
			replyHeaders = []string{string(f.Get("reply-to")), string(f.Get("reply-to-sender")), string(f.Get("reply-to-excerpt"))}
		}
	}
	if fmt.Sprint(replyHeaders) != fmt.Sprint([]string{"1", "alice", "lunch on friday?"}) {
		t.Errorf("MESSAGE of the reply: reply-to headers %q, want 1, alice, lunch on friday?", replyHeaders)
	}
	root = parley.Message{}
	if err := json.Unmarshal(evBody, &root); err != nil || root.Thread == nil || root.Thread.Replies != 2 ||
		fmt.Sprint(root.Thread.Participants) != fmt.Sprint([]string{bu.ID, au.ID}) {
		t.Errorf("second thread event = %s %+v (%v), want 2 replies by bob then alice", evBody, root.Thread, err)
	}

	var page struct{ Messages []parley.Message }
	if st := bob.do("GET", "/api/rooms/"+r.ID+"/messages/1/replies", nil, &page); st != http.StatusOK || len(page.Messages) != 2 ||
		page.Messages[0].Seq != 3 || page.Messages[1].Seq != 4 {
		t.Errorf("thread = %d %+v, want replies 3 and 4", st, page.Messages)
	}
	if bob.do("GET", "/api/rooms/"+r.ID+"/messages/1/replies?after=3&limit=1", nil, &page); len(page.Messages) != 1 || page.Messages[0].Seq != 4 {
		t.Errorf("thread after 3 = %+v, want reply 4", page.Messages)
	}
	bob.do("GET", "/api/rooms/"+r.ID+"/messages", nil, &page)
	if got := page.Messages[3]; got.Seq != 1 || got.Thread == nil || got.Thread.Replies != 2 {
		t.Errorf("root in history = %+v, want 2 replies", got)
	}
	// The root's edit: its replies' excerpt follows, on every read.
	if st := alice.do("PATCH", "/api/rooms/"+r.ID+"/messages/1", map[string]string{"body": "lunch on saturday?"}, nil); st != http.StatusOK {
		t.Fatalf("edit: %d", st)
	}
	bob.do("GET", "/api/rooms/"+r.ID+"/messages", nil, &page)
	if page.Messages[0].ReplyTo == nil || page.Messages[0].ReplyTo.Excerpt != "lunch on saturday?" {
		t.Errorf("reply after the root's edit = %+v", page.Messages[0].ReplyTo)
	}

	var e apiError
	for _, tc := range []struct {
		name    string
		c       *client
		replyTo int64
		status  int
		code    string
	}{
		{"future seq", bob, 99, http.StatusBadRequest, parley.CodeInvalid},
		{"another room's seq", bob, 5, http.StatusBadRequest, parley.CodeInvalid},
		{"negative", bob, -1, http.StatusBadRequest, parley.CodeInvalid},
		{"not a member", mallory, 1, http.StatusForbidden, parley.CodeForbidden},
	} {
		e = apiError{}
		if st := tc.c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "x", "reply_to": tc.replyTo}, &e); st != tc.status || e.Error.Code != tc.code {
			t.Errorf("%s: reply = %d %q, want %d %s", tc.name, st, e.Error.Code, tc.status, tc.code)
		}
	}
	alice.do("DELETE", "/api/rooms/"+r.ID+"/messages/2", nil, nil)
	e = apiError{}
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "x", "reply_to": 2}, &e); st != http.StatusConflict {
		t.Errorf("reply to a deleted message = %d %q, want 409", st, e.Error.Code)
	}
	b := dialStomp(t, m, "websocket", bob.token)
	b.send("SEND\n" + dest + "reply-to:nope\nreceipt:x\n\nx\x00")
	b.expect("ERROR", "code:invalid", "receipt-id:x")
	if got := bob.do("GET", "/api/rooms/"+other.ID+"/messages/1/replies", nil, nil); got != http.StatusForbidden {
		t.Errorf("another room's thread = %d, want 403", got)
	}
}

// TestClusterReplies: a reply on node one shows its root's new summary
// live on node two (thread event) and in node three's history, whose hot
// caches follow; the root's edit reaches the reply's excerpt on every
// node.
func TestClusterReplies(t *testing.T) {
	env := needCluster(t)
	nodes := []*Main{startNode(t, env, "one"), startNode(t, env, "two"), startNode(t, env, "three")}
	r, ms := groupRoom(t, nodes, "reply", 3)
	alice, bob, carol := ms[0], ms[1], ms[2]
	alice.c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "root"}, nil)
	for _, m := range ms {
		m.c.do("GET", "/api/rooms/"+r.ID+"/messages", nil, nil) // warm every node's history
	}
	sc := subscribeEvents(t, nodes[1], bob.c.token, r.ID, false)
	if st := alice.c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]any{"body": "a reply", "reply_to": 1}, nil); st != http.StatusCreated {
		t.Fatalf("reply: %d", st)
	}
	if f, root := nextEventOf(t, sc, "thread"); root.Thread == nil || root.Thread.Replies != 1 {
		t.Fatalf("node two got %v %+v", f, root)
	}
	alice.c.do("PATCH", "/api/rooms/"+r.ID+"/messages/1", map[string]string{"body": "root, edited"}, nil)
	nextEventOf(t, sc, "edited")
	for i, m := range []member{alice, bob, carol} {
		var page struct{ Messages []parley.Message }
		m.c.do("GET", "/api/rooms/"+r.ID+"/messages", nil, &page)
		if len(page.Messages) != 2 || page.Messages[1].Thread == nil || page.Messages[1].Thread.Replies != 1 ||
			page.Messages[0].ReplyTo == nil || page.Messages[0].ReplyTo.Excerpt != "root, edited" {
			t.Errorf("node %d history = %+v", i, page.Messages)
		}
	}
}
