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

// pinPath is the REST path of a message's pin.
func pinPath(roomID string, seq int64) string {
	return fmt.Sprintf("/api/rooms/%s/messages/%d/pin", roomID, seq)
}

// pinEvent is a pin event (or a replayed change event) read off a
// connection: its headers copied (the reader reuses frames) and its body.
type pinEvent struct {
	kind    string
	headers map[string]string
	msg     parley.Message
}

// nextChangeEvent reads frames until an event of one of kinds, failing on
// an ERROR or after 15 s.
func nextChangeEvent(t *testing.T, sc *stompClient, kinds ...string) pinEvent {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		f := sc.read()
		if f.Command == stomp.Error {
			t.Fatalf("got %v, want an event of %v", f, kinds)
		}
		if f.Command != stomp.Message {
			continue
		}
		kind := string(f.Get("event"))
		for _, k := range kinds {
			if kind != k {
				continue
			}
			ev := pinEvent{kind: kind, headers: map[string]string{}}
			for i := 0; i < f.NumHeaders(); i++ {
				name, v := f.Header(i)
				ev.headers[string(name)] = string(v)
			}
			if err := json.Unmarshal(f.Body, &ev.msg); err != nil {
				t.Fatalf("event body %q: %v", f.Body, err)
			}
			return ev
		}
	}
	t.Fatalf("no event of %v within 15 s", kinds)
	return pinEvent{}
}

// pinList is the body of GET /api/rooms/{id}/pins.
type pinList struct {
	Pins []struct {
		Pin      int64          `json:"pin"`
		PinnedBy string         `json:"pinned_by"`
		PinnedAt time.Time      `json:"pinned_at"`
		Message  parley.Message `json:"message"`
	} `json:"pins"`
	NextBefore int64 `json:"next_before"`
}

func (l pinList) seqs() []int64 {
	var s []int64
	for _, p := range l.Pins {
		s = append(s, p.Message.Seq)
	}
	return s
}

// TestPins: over the real node (SQLite), pins by REST and STOMP: the
// owner pins and unpins (idempotent), a member may not; the live pin
// event with its headers; the pin list, paged; pinned on the history
// page, in changed_after, in since-seq MESSAGE frames (pinned-by,
// pinned-at) and in since-change replays; deletion unpins; and the
// refusals: a member, an outsider, an unknown seq, another room's seq, a
// deleted message, malformed STOMP frames.
func TestPins(t *testing.T) {
	m := MustOpenMain(t)
	alice, au := mustSignUp(t, m.Addr(), "alice")
	bob, _ := mustSignUp(t, m.Addr(), "bob")
	mallory, _ := mustSignUp(t, m.Addr(), "mallory")
	var r, other room
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "pins"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "other"}, &other); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: %d", st)
	}
	for _, body := range []string{"one", "two", "three"} {
		if st := alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": body}, nil); st != http.StatusCreated {
			t.Fatalf("send: %d", st)
		}
	}
	for _, body := range []string{"a", "b", "c", "d", "e"} {
		if st := alice.do("POST", "/api/rooms/"+other.ID+"/messages", map[string]string{"body": body}, nil); st != http.StatusCreated {
			t.Fatalf("send: %d", st)
		}
	}
	sc := subscribeEvents(t, m, bob.token, r.ID, false)

	var e apiError
	if st := bob.do("PUT", pinPath(r.ID, 1), nil, &e); st != http.StatusForbidden || e.Error.Code != parley.CodeForbidden {
		t.Errorf("member pins = %d %q, want 403 forbidden", st, e.Error.Code)
	}
	var got parley.Message
	if st := alice.do("PUT", pinPath(r.ID, 2), nil, &got); st != http.StatusOK || got.Pinned == nil || got.Pinned.By != au.ID || got.Change != 1 {
		t.Fatalf("PUT pin 2 = %d %+v, want 200 pinned by alice at change 1", st, got)
	}
	ev := nextChangeEvent(t, sc, "pin")
	for h, want := range map[string]string{"user": au.ID, "seq": "2", "action": "pin", "change": "1", "pinned-by": au.ID} {
		if v := ev.headers[h]; v != want {
			t.Errorf("pin event header %s = %q, want %q", h, v, want)
		}
	}
	if ev.headers["pinned-at"] == "" || ev.msg.Pinned == nil || ev.msg.Pinned.By != au.ID {
		t.Errorf("pin event = %v %+v, want pinned-at and the body pinned by alice", ev.headers, ev.msg.Pinned)
	}
	// Idempotent: a second PUT changes nothing, sends nothing.
	if st := alice.do("PUT", pinPath(r.ID, 2), nil, &got); st != http.StatusOK || got.Change != 1 || got.Pinned == nil {
		t.Errorf("repeated PUT = %d change %d, want 200 at change 1", st, got.Change)
	}

	// alice pins over STOMP.
	a := dialStomp(t, m, "websocket", alice.token)
	dest := "destination:/app/rooms." + r.ID + "\n"
	a.send("SEND\n" + dest + "pin-seq:1\nreceipt:p\n\n\x00")
	a.expect("RECEIPT", "receipt-id:p", "seq:1", "change:2")
	if ev = nextChangeEvent(t, sc, "pin"); ev.headers["seq"] != "1" || ev.headers["change"] != "2" || ev.headers["action"] != "pin" {
		t.Errorf("second pin event = %v, want seq 1 at change 2", ev.headers)
	}

	// The list, newest pin first, paged.
	var list pinList
	if st := bob.do("GET", "/api/rooms/"+r.ID+"/pins", nil, &list); st != http.StatusOK || fmt.Sprint(list.seqs()) != "[1 2]" || list.NextBefore != 0 {
		t.Fatalf("GET pins = %d %+v, want [1 2]", st, list)
	}
	if p := list.Pins[1]; p.PinnedBy != au.ID || p.PinnedAt.IsZero() || p.Pin != 1 || p.Message.Body != "two" || p.Message.Pinned == nil {
		t.Errorf("pin entry = %+v, want alice's pin of message two at change 1", p)
	}
	if st := bob.do("GET", "/api/rooms/"+r.ID+"/pins?limit=1", nil, &list); st != http.StatusOK || fmt.Sprint(list.seqs()) != "[1]" || list.NextBefore != 2 {
		t.Errorf("GET pins?limit=1 = %d %v next %d, want [1] next 2", st, list.seqs(), list.NextBefore)
	}
	if st := bob.do("GET", "/api/rooms/"+r.ID+"/pins?limit=1&before=2", nil, &list); st != http.StatusOK || fmt.Sprint(list.seqs()) != "[2]" {
		t.Errorf("GET pins?before=2 = %d %v, want [2]", st, list.seqs())
	}
	var page struct{ Messages []parley.Message }
	bob.do("GET", "/api/rooms/"+r.ID+"/messages", nil, &page)
	if len(page.Messages) != 3 || page.Messages[0].Pinned != nil || page.Messages[1].Pinned == nil || page.Messages[2].Pinned == nil {
		t.Errorf("bob's history = %+v, want messages 1 and 2 pinned", page.Messages)
	}

	// since-seq: the MESSAGE frames of pinned messages say so.
	replay := dialStomp(t, m, "websocket", bob.token)
	replay.send("SUBSCRIBE\nid:1\ndestination:/topic/rooms." + r.ID + "\nsince-seq:0\n\n\x00")
	for seq := 1; seq <= 3; seq++ {
		f := replay.expect("MESSAGE", fmt.Sprint("seq:", seq))
		by, at := string(f.Get("pinned-by")), string(f.Get("pinned-at"))
		if pinned := seq != 3; pinned != (by == au.ID && at != "") || !pinned && (by != "" || at != "") {
			t.Errorf("replayed MESSAGE %d pinned-by %q pinned-at %q, want pinned %v", seq, by, at, pinned)
		}
	}

	// Unpin over STOMP, twice (idempotent), then over REST.
	a.send("SEND\n" + dest + "unpin-seq:1\nreceipt:u\n\n\x00")
	a.expect("RECEIPT", "receipt-id:u", "change:3")
	a.send("SEND\n" + dest + "unpin-seq:1\nreceipt:u2\n\n\x00")
	a.expect("RECEIPT", "receipt-id:u2", "change:3")
	if ev = nextChangeEvent(t, sc, "pin"); ev.headers["action"] != "unpin" || ev.headers["seq"] != "1" || ev.headers["pinned-by"] != "" || ev.msg.Pinned != nil {
		t.Errorf("unpin event = %v %+v, want seq 1 unpinned", ev.headers, ev.msg.Pinned)
	}
	got = parley.Message{}
	if st := alice.do("DELETE", pinPath(r.ID, 1), nil, &got); st != http.StatusOK || got.Pinned != nil || got.Change != 3 {
		t.Errorf("repeated DELETE = %d %+v, want 200 unpinned at change 3", st, got)
	}
	sc.conn.Close()

	// While bob's events are away: a pin of 3; since-change 2 replays
	// message 1 (unpinned) and message 3 (pinned), each once.
	if st := alice.do("PUT", pinPath(r.ID, 3), nil, nil); st != http.StatusOK {
		t.Fatalf("PUT pin 3 = %d", st)
	}
	sc = dialStomp(t, m, "websocket", bob.token)
	sc.send("SUBSCRIBE\nid:ev\ndestination:/topic/rooms." + r.ID + ".events\nsince-change:2\nreceipt:ev\n\n\x00")
	expectPast(t, sc, "RECEIPT", "receipt-id:ev")
	ev = nextChangeEvent(t, sc, "pin", "edited")
	if ev.headers["change"] != "3" || ev.msg.Seq != 1 || ev.msg.Pinned != nil || ev.headers["pinned-by"] != "" {
		t.Errorf("first replayed = %s %v %+v, want message 1 unpinned at change 3", ev.kind, ev.headers, ev.msg)
	}
	ev = nextChangeEvent(t, sc, "pin", "edited")
	if ev.kind != "pin" || ev.headers["change"] != "4" || ev.msg.Seq != 3 || ev.msg.Pinned == nil || ev.headers["pinned-by"] != au.ID || ev.headers["pinned-at"] == "" {
		t.Errorf("second replayed = %s %v %+v, want a pin event of message 3 at change 4", ev.kind, ev.headers, ev.msg)
	}
	var changed struct{ Messages []parley.Message }
	bob.do("GET", "/api/rooms/"+r.ID+"/messages?changed_after=2", nil, &changed)
	if len(changed.Messages) != 2 || changed.Messages[0].Seq != 1 || changed.Messages[0].Pinned != nil || changed.Messages[1].Seq != 3 || changed.Messages[1].Pinned == nil {
		t.Errorf("changed_after=2 = %+v, want 1 unpinned, 3 pinned", changed.Messages)
	}

	// Deleting a pinned message unpins it; a deleted message takes no pin.
	if st := alice.do("DELETE", "/api/rooms/"+r.ID+"/messages/3", nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
	if st := bob.do("GET", "/api/rooms/"+r.ID+"/pins", nil, &list); st != http.StatusOK || fmt.Sprint(list.seqs()) != "[2]" {
		t.Errorf("GET pins after the deletion = %d %v, want [2]", st, list.seqs())
	}

	// Refusals, none of which stores anything.
	for _, tc := range []struct {
		name   string
		c      *client
		method string
		path   string
		status int
		code   string
	}{
		{"member pins", bob, "PUT", pinPath(r.ID, 1), http.StatusForbidden, parley.CodeForbidden},
		{"member unpins", bob, "DELETE", pinPath(r.ID, 2), http.StatusForbidden, parley.CodeForbidden},
		{"outsider pins", mallory, "PUT", pinPath(r.ID, 1), http.StatusForbidden, parley.CodeForbidden},
		{"outsider lists", mallory, "GET", "/api/rooms/" + r.ID + "/pins", http.StatusForbidden, parley.CodeForbidden},
		{"unknown room", alice, "PUT", pinPath("nope", 1), http.StatusNotFound, parley.CodeNotFound},
		{"unknown seq", alice, "PUT", pinPath(r.ID, 99), http.StatusNotFound, parley.CodeNotFound},
		{"another room's seq", alice, "PUT", pinPath(r.ID, 5), http.StatusNotFound, parley.CodeNotFound},
		{"bad seq", alice, "PUT", "/api/rooms/" + r.ID + "/messages/x/pin", http.StatusBadRequest, parley.CodeInvalid},
		{"deleted message", alice, "PUT", pinPath(r.ID, 3), http.StatusConflict, parley.CodeConflict},
		{"bad before", bob, "GET", "/api/rooms/" + r.ID + "/pins?before=x", http.StatusBadRequest, parley.CodeInvalid},
		{"bad limit", bob, "GET", "/api/rooms/" + r.ID + "/pins?limit=0", http.StatusBadRequest, parley.CodeInvalid},
	} {
		e = apiError{}
		if st := tc.c.do(tc.method, tc.path, nil, &e); st != tc.status || e.Error.Code != tc.code || e.Error.Message == "" {
			t.Errorf("%s: %s %s = %d %q %q, want %d %s", tc.name, tc.method, tc.path, st, e.Error.Code, e.Error.Message, tc.status, tc.code)
		}
	}
	var rr room
	alice.do("GET", "/api/rooms/"+r.ID, nil, &rr)
	var after pinList
	bob.do("GET", "/api/rooms/"+r.ID+"/pins", nil, &after)
	if fmt.Sprint(after.seqs()) != "[2]" {
		t.Errorf("pins after the refusals = %v, want [2]", after.seqs())
	}
	// Over STOMP: a member, a malformed seq, a body, both headers.
	b := dialStomp(t, m, "websocket", bob.token)
	b.send("SEND\n" + dest + "pin-seq:2\nreceipt:y\n\n\x00")
	b.expect("ERROR", "code:forbidden", "receipt-id:y")
	for i, frame := range []string{
		"pin-seq:abc\nreceipt:z\n\n\x00",
		"pin-seq:1\nreceipt:z\n\nbody\x00",
		"pin-seq:1\nunpin-seq:1\nreceipt:z\n\n\x00",
		"pin-seq:1\nreact-seq:1\nemoji:👍\nreceipt:z\n\n\x00",
		"pin-seq:1\nedit-seq:1\nreceipt:z\n\nnew text\x00",
		"unpin-seq:1\ndelete-seq:1\nreceipt:z\n\n\x00",
		"pin-seq:-1\nreceipt:z\n\n\x00",
		"pin-seq:0\nreceipt:z\n\n\x00",
		"unpin-seq:99999999999999999999\nreceipt:z\n\n\x00",
		"pin-seq:\nreceipt:z\n\n\x00",
	} {
		c := dialStomp(t, m, "websocket", alice.token)
		c.send("SEND\n" + dest + frame)
		if f := c.expect("ERROR", "code:invalid", "receipt-id:z"); len(f.Get("message")) == 0 {
			t.Errorf("frame %d: ERROR without a message", i)
		}
	}
}

// TestClusterPins: a pin made over STOMP on node one reaches an events
// subscriber on node two live; on node three the pin list and the history
// page show it (the hot caches follow), and a since-change resume replays
// it with its pinned-by header.
func TestClusterPins(t *testing.T) {
	env := needCluster(t)
	nodes := []*Main{startNode(t, env, "one"), startNode(t, env, "two"), startNode(t, env, "three")}
	r, ms := groupRoom(t, nodes, "pin", 3)
	alice, bob, carol := ms[0], ms[1], ms[2]
	if st := alice.c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "pin me"}, nil); st != http.StatusCreated {
		t.Fatalf("send: %d", st)
	}
	for _, m := range ms { // warm every node's history of the room
		m.c.do("GET", "/api/rooms/"+r.ID+"/messages", nil, nil)
	}
	sc := subscribeEvents(t, nodes[1], bob.c.token, r.ID, false)
	a := dialStomp(t, nodes[0], "websocket", alice.c.token)
	a.send("SEND\ndestination:/app/rooms." + r.ID + "\npin-seq:1\nreceipt:p\n\n\x00")
	a.expect("RECEIPT", "receipt-id:p", "change:1")
	ev := nextChangeEvent(t, sc, "pin")
	if ev.headers["user"] != alice.u.ID || ev.headers["action"] != "pin" || ev.headers["pinned-by"] != alice.u.ID || ev.msg.Pinned == nil {
		t.Fatalf("node two got %v %+v, want alice's pin", ev.headers, ev.msg.Pinned)
	}
	var list pinList
	if st := carol.c.do("GET", "/api/rooms/"+r.ID+"/pins", nil, &list); st != http.StatusOK || fmt.Sprint(list.seqs()) != "[1]" || list.Pins[0].PinnedBy != alice.u.ID {
		t.Errorf("node three's pins = %d %+v, want message 1 pinned by alice", st, list)
	}
	for i, m := range ms {
		var page struct{ Messages []parley.Message }
		m.c.do("GET", "/api/rooms/"+r.ID+"/messages", nil, &page)
		if len(page.Messages) != 1 || page.Messages[0].Pinned == nil || page.Messages[0].Pinned.By != alice.u.ID {
			t.Errorf("node %d history = %+v, want message 1 pinned", i, page.Messages)
		}
	}
	sc3 := dialStomp(t, nodes[2], "websocket", carol.c.token)
	sc3.send("SUBSCRIBE\nid:ev\ndestination:/topic/rooms." + r.ID + ".events\nsince-change:0\nreceipt:ev\n\n\x00")
	expectPast(t, sc3, "RECEIPT", "receipt-id:ev")
	if ev = nextChangeEvent(t, sc3, "pin"); ev.headers["change"] != "1" || ev.headers["pinned-by"] != alice.u.ID {
		t.Fatalf("node three's replay: %v", ev.headers)
	}
	// An unpin on node three reaches node two.
	if st := alice.c.do("DELETE", pinPath(r.ID, 1), nil, nil); st != http.StatusOK {
		t.Fatalf("unpin: %d", st)
	}
	if ev = nextChangeEvent(t, sc, "pin"); ev.headers["action"] != "unpin" || ev.msg.Pinned != nil {
		t.Errorf("node two's unpin event: %v %+v", ev.headers, ev.msg.Pinned)
	}
}
