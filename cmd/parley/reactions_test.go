package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"parley"
	"parley/stomp"
)

// reactPath is the REST path of a reaction.
func reactPath(roomID string, seq int64, emoji string) string {
	return fmt.Sprintf("/api/rooms/%s/messages/%d/reactions/%s", roomID, seq, url.PathEscape(emoji))
}

// nextReaction reads frames until a reaction event, failing on an ERROR or
// after 15 s.
func nextReaction(t *testing.T, sc *stompClient) (*stomp.Frame, parley.Message) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		f := sc.read()
		if f.Command == stomp.Error {
			t.Fatalf("got %v, want a reaction event", f)
		}
		if f.Command == stomp.Message && string(f.Get("event")) == "reaction" {
			var m parley.Message
			if err := json.Unmarshal(f.Body, &m); err != nil {
				t.Fatalf("event body %q: %v", f.Body, err)
			}
			return f, m
		}
	}
	t.Fatal("no reaction event within 15 s")
	return nil, parley.Message{}
}

// reactionsOf renders reactions as "emoji×count(me) ...".
func reactionsOf(rs []parley.Reaction) string {
	var b strings.Builder
	for _, r := range rs {
		fmt.Fprintf(&b, "%s×%d", r.Emoji, r.Count)
		if r.Me {
			b.WriteString("(me)")
		}
		b.WriteByte(' ')
	}
	return b.String()
}

// TestReactions: over the real node (SQLite), reactions by REST and STOMP:
// idempotent PUT and DELETE, me per caller on the history page, who
// reacted, the live reaction event with its headers, since-change replay
// of reactions, and the refusals: not a member, an unknown or deleted
// message, a malformed or over-long emoji, a flood of distinct emojis.
func TestReactions(t *testing.T) {
	m := MustOpenMain(t)
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	bob, bu := mustSignUp(t, m.Addr(), "bob")
	mallory, _ := mustSignUp(t, m.Addr(), "mallory")
	var r room
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "reactions"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: %d", st)
	}
	for _, body := range []string{"one", "two"} {
		if st := alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": body}, nil); st != http.StatusCreated {
			t.Fatalf("send: %d", st)
		}
	}
	sc := subscribeEvents(t, m, alice.token, r.ID, false)

	var got parley.Message
	if st := bob.do("PUT", reactPath(r.ID, 1, "👍"), nil, &got); st != http.StatusOK || reactionsOf(got.Reactions) != "👍×1(me) " || got.Change != 1 {
		t.Fatalf("PUT 👍 = %d %+v, want 200, 👍×1 mine at change 1", st, got)
	}
	f, ev := nextReaction(t, sc)
	for h, want := range map[string]string{"user": bu.ID, "seq": "1", "emoji": "👍", "action": "added", "change": "1"} {
		if v := string(f.Get(h)); v != want {
			t.Errorf("reaction event header %s = %q, want %q", h, v, want)
		}
	}
	if reactionsOf(ev.Reactions) != "👍×1 " {
		t.Errorf("reaction event body reactions = %q, want 👍×1 (me is each client's own)", reactionsOf(ev.Reactions))
	}
	// Idempotent: a second PUT changes nothing.
	if st := bob.do("PUT", reactPath(r.ID, 1, "👍"), nil, &got); st != http.StatusOK || got.Change != 1 {
		t.Errorf("repeated PUT = %d change %d, want 200 at change 1", st, got.Change)
	}

	// alice reacts over STOMP.
	a := dialStomp(t, m, "websocket", alice.token)
	dest := "destination:/app/rooms." + r.ID + "\n"
	a.send("SEND\n" + dest + "react-seq:1\nemoji:👍\nreceipt:r\n\n\x00")
	a.expect("RECEIPT", "receipt-id:r", "seq:1", "change:2")
	a.send("SEND\n" + dest + "react-seq:1\nemoji:\\cparty\\c\nreceipt:r2\n\n\x00") // ":party:", escaped
	a.expect("RECEIPT", "receipt-id:r2", "change:3")
	if f, _ = nextReaction(t, sc); string(f.Get("change")) != "2" {
		t.Errorf("second event = %v, want change 2", f)
	}
	if f, _ = nextReaction(t, sc); string(f.Get("emoji")) != ":party:" {
		t.Errorf("third event emoji = %q, want :party:", f.Get("emoji"))
	}

	// The history page: counts for everyone, me per caller.
	var page struct{ Messages []parley.Message }
	bob.do("GET", "/api/rooms/"+r.ID+"/messages", nil, &page)
	if len(page.Messages) != 2 || reactionsOf(page.Messages[1].Reactions) != "👍×2(me) :party:×1 " {
		t.Errorf("bob's page = %+v, want message 1 with 👍×2(me) :party:×1", page.Messages)
	}
	alice.do("GET", "/api/rooms/"+r.ID+"/messages", nil, &page)
	if reactionsOf(page.Messages[1].Reactions) != "👍×2(me) :party:×1(me) " {
		t.Errorf("alice's page reactions = %q", reactionsOf(page.Messages[1].Reactions))
	}
	var users struct{ Users []user }
	if st := alice.do("GET", reactPath(r.ID, 1, "👍")+"/users", nil, &users); st != http.StatusOK || len(users.Users) != 2 || users.Users[0].Name != "bob" || users.Users[1].Name != "alice" {
		t.Errorf("who reacted 👍 = %d %+v, want bob then alice", st, users)
	}

	// bob takes his back, twice (idempotent), over STOMP then REST.
	b := dialStomp(t, m, "websocket", bob.token)
	b.send("SEND\n" + dest + "react-seq:1\nemoji:👍\naction:remove\nreceipt:x\n\n\x00")
	b.expect("RECEIPT", "receipt-id:x", "change:4")
	if st := bob.do("DELETE", reactPath(r.ID, 1, "👍"), nil, &got); st != http.StatusOK || reactionsOf(got.Reactions) != "👍×1 :party:×1 " || got.Change != 4 {
		t.Errorf("repeated DELETE = %d %+v, want 200 at change 4", st, got)
	}
	if f, _ = nextReaction(t, sc); string(f.Get("action")) != "removed" || string(f.Get("user")) != bu.ID {
		t.Errorf("removal event = %v", f)
	}
	sc.conn.Close()

	// While alice's events are away: a reaction, then since-change 3
	// replays message 1 once, as a reaction event with its counts now.
	if st := bob.do("PUT", reactPath(r.ID, 2, "🎉"), nil, nil); st != http.StatusOK {
		t.Fatalf("PUT 🎉 on 2 = %d", st)
	}
	sc = dialStomp(t, m, "websocket", alice.token)
	sc.send("SUBSCRIBE\nid:ev\ndestination:/topic/rooms." + r.ID + ".events\nsince-change:3\nreceipt:ev\n\n\x00")
	expectPast(t, sc, "RECEIPT", "receipt-id:ev")
	f, ev = nextReaction(t, sc)
	if string(f.Get("change")) != "4" || ev.Seq != 1 || reactionsOf(ev.Reactions) != "👍×1 :party:×1 " {
		t.Errorf("first replayed = %v %+v, want message 1 at change 4", f, ev)
	}
	f, ev = nextReaction(t, sc)
	if string(f.Get("change")) != "5" || ev.Seq != 2 || reactionsOf(ev.Reactions) != "🎉×1 " {
		t.Errorf("second replayed = %v %+v, want message 2 at change 5", f, ev)
	}

	// Refusals.
	var e apiError
	for _, tc := range []struct {
		name   string
		c      *client
		method string
		path   string
		status int
		code   string
	}{
		{"not a member", mallory, "PUT", reactPath(r.ID, 1, "👍"), http.StatusForbidden, parley.CodeForbidden},
		{"not a member removes", mallory, "DELETE", reactPath(r.ID, 1, "👍"), http.StatusForbidden, parley.CodeForbidden},
		{"not a member lists", mallory, "GET", reactPath(r.ID, 1, "👍") + "/users", http.StatusForbidden, parley.CodeForbidden},
		{"unknown room", bob, "PUT", reactPath("nope", 1, "👍"), http.StatusNotFound, parley.CodeNotFound},
		{"unknown seq", bob, "PUT", reactPath(r.ID, 99, "👍"), http.StatusNotFound, parley.CodeNotFound},
		{"letters", bob, "PUT", reactPath(r.ID, 1, "lol"), http.StatusBadRequest, parley.CodeInvalid},
		{"over-long", bob, "PUT", reactPath(r.ID, 1, strings.Repeat("👍", 9)), http.StatusBadRequest, parley.CodeInvalid},
		{"markup", bob, "PUT", reactPath(r.ID, 1, ":<b>:"), http.StatusBadRequest, parley.CodeInvalid},
	} {
		e = apiError{}
		if st := tc.c.do(tc.method, tc.path, nil, &e); st != tc.status || e.Error.Code != tc.code {
			t.Errorf("%s: %s %s = %d %q, want %d %s", tc.name, tc.method, tc.path, st, e.Error.Code, tc.status, tc.code)
		}
	}
	// A flood of distinct emojis stops at the per-user bound.
	for i := range parley.MaxReactionsPerUser + 2 {
		st := bob.do("PUT", reactPath(r.ID, 2, fmt.Sprintf(":e%d:", i)), nil, &e)
		if want := http.StatusOK; i >= parley.MaxReactionsPerUser-1 {
			// bob has 🎉 on message 2 already: the 10th new one is his 11th.
			if st != http.StatusConflict {
				t.Errorf("distinct emoji %d = %d, want 409", i, st)
			}
		} else if st != want {
			t.Errorf("distinct emoji %d = %d, want 200", i, st)
		}
	}
	// A deleted message takes no reaction, and has none left.
	if st := alice.do("DELETE", "/api/rooms/"+r.ID+"/messages/1", nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
	e = apiError{}
	if st := bob.do("PUT", reactPath(r.ID, 1, "👍"), nil, &e); st != http.StatusConflict || e.Error.Code != parley.CodeConflict {
		t.Errorf("PUT on a deleted message = %d %q, want 409 conflict", st, e.Error.Code)
	}
	// Over STOMP: a malformed emoji and a non-member are ERROR frames.
	b.send("SEND\n" + dest + "react-seq:2\nemoji:abc\nreceipt:y\n\n\x00")
	b.expect("ERROR", "code:invalid", "receipt-id:y")
	mc := dialStomp(t, m, "websocket", mallory.token)
	mc.send("SEND\n" + dest + "react-seq:2\nemoji:👍\nreceipt:z\n\n\x00")
	mc.expect("ERROR", "code:forbidden", "receipt-id:z")
}

// TestClusterReactions: a reaction made on node one reaches an events
// subscriber on node two live, and a subscriber on node three resuming
// with since-change reads it from the shared store; the history page on
// every node shows the new counts (the hot caches follow).
func TestClusterReactions(t *testing.T) {
	env := needCluster(t)
	nodes := []*Main{startNode(t, env, "one"), startNode(t, env, "two"), startNode(t, env, "three")}
	r, ms := groupRoom(t, nodes, "react", 3)
	alice, bob, carol := ms[0], ms[1], ms[2]
	if st := alice.c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "hello"}, nil); st != http.StatusCreated {
		t.Fatalf("send: %d", st)
	}
	// Warm every node's history of the room.
	for _, m := range ms {
		m.c.do("GET", "/api/rooms/"+r.ID+"/messages", nil, nil)
	}
	sc := subscribeEvents(t, nodes[1], bob.c.token, r.ID, false)
	a := dialStomp(t, nodes[0], "websocket", alice.c.token)
	a.send("SEND\ndestination:/app/rooms." + r.ID + "\nreact-seq:1\nemoji:👍\nreceipt:r\n\n\x00")
	a.expect("RECEIPT", "receipt-id:r", "change:1")
	f, ev := nextReaction(t, sc)
	if string(f.Get("user")) != alice.u.ID || string(f.Get("emoji")) != "👍" || reactionsOf(ev.Reactions) != "👍×1 " {
		t.Fatalf("node two got %v %+v, want alice's 👍", f, ev)
	}
	sc3 := dialStomp(t, nodes[2], "websocket", carol.c.token)
	sc3.send("SUBSCRIBE\nid:ev\ndestination:/topic/rooms." + r.ID + ".events\nsince-change:0\nreceipt:ev\n\n\x00")
	expectPast(t, sc3, "RECEIPT", "receipt-id:ev")
	if f, ev = nextReaction(t, sc3); string(f.Get("change")) != "1" || reactionsOf(ev.Reactions) != "👍×1 " {
		t.Fatalf("node three's replay: %v %+v", f, ev)
	}
	for i, m := range ms {
		var page struct{ Messages []parley.Message }
		m.c.do("GET", "/api/rooms/"+r.ID+"/messages", nil, &page)
		want := "👍×1 "
		if i == 0 {
			want = "👍×1(me) "
		}
		if len(page.Messages) != 1 || reactionsOf(page.Messages[0].Reactions) != want {
			t.Errorf("node %d history = %+v, want %s", i, page.Messages, want)
		}
	}
}
