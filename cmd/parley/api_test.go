package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestAPIConversation(t *testing.T) {
	m := MustOpenMain(t)
	alice, aliceUser := mustSignUp(t, m.Addr(), "alice")
	bob, bobUser := mustSignUp(t, m.Addr(), "bob")

	var me user
	if st := alice.do("GET", "/api/me", nil, &me); st != 200 || me != aliceUser {
		t.Fatalf("GET /api/me = %d %+v, want 200 %+v", st, me, aliceUser)
	}

	var found user
	if st := alice.do("GET", "/api/users/bob", nil, &found); st != 200 || found != bobUser {
		t.Errorf("GET /api/users/bob = %d %+v, want 200 %+v", st, found, bobUser)
	}

	var g room
	if st := alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "general", "capacity": 10}, &g); st != http.StatusCreated {
		t.Fatalf("create room: status %d", st)
	}
	if g.Kind != "group" || g.Title != "general" || g.Capacity != 10 || g.MemberCount != 1 || g.LastSeq != 0 {
		t.Errorf("created room = %+v", g)
	}
	if st := bob.do("POST", "/api/rooms/"+g.ID+"/members", nil, &g); st != http.StatusCreated || g.MemberCount != 2 {
		t.Errorf("join = %d %+v, want 201 with 2 members", st, g)
	}
	if st := bob.do("POST", "/api/rooms/"+g.ID+"/members", nil, &g); st != http.StatusOK || g.MemberCount != 2 {
		t.Errorf("second join = %d %+v, want 200 with 2 members", st, g)
	}

	for i := 1; i <= 5; i++ {
		var msg message
		st := alice.do("POST", "/api/rooms/"+g.ID+"/messages", map[string]string{"body": fmt.Sprintf("hello %d", i), "client_id": fmt.Sprintf("c%d", i)}, &msg)
		if st != http.StatusCreated || msg.Seq != int64(i) || msg.SenderID != aliceUser.ID || msg.SenderName != "alice" {
			t.Fatalf("send %d = %d %+v", i, st, msg)
		}
	}
	// An idempotent repeat returns the original with 200.
	var again message
	if st := alice.do("POST", "/api/rooms/"+g.ID+"/messages", map[string]string{"body": "hello 3", "client_id": "c3"}, &again); st != http.StatusOK || again.Seq != 3 {
		t.Errorf("repeat send = %d seq %d, want 200 seq 3", st, again.Seq)
	}

	var list struct {
		Rooms []struct {
			Room        room     `json:"room"`
			LastMessage *message `json:"last_message"`
			Unread      int64    `json:"unread"`
		} `json:"rooms"`
		NextCursor *string `json:"next_cursor"`
	}
	if st := bob.do("GET", "/api/me/rooms", nil, &list); st != 200 || len(list.Rooms) != 1 {
		t.Fatalf("room list = %d %+v", st, list)
	}
	if e := list.Rooms[0]; e.Unread != 5 || e.LastMessage == nil || e.LastMessage.Seq != 5 || e.Room.LastSeq != 5 {
		t.Errorf("bob's entry = %+v, want 5 unread and last message seq 5", e)
	}
	if st := bob.do("PUT", "/api/rooms/"+g.ID+"/read", map[string]int64{"seq": 4}, nil); st != http.StatusNoContent {
		t.Errorf("mark read = %d, want 204", st)
	}
	if st := bob.do("PUT", "/api/rooms/"+g.ID+"/read", map[string]int64{"seq": 2}, nil); st != http.StatusNoContent {
		t.Errorf("mark read backwards = %d, want 204", st)
	}
	bob.do("GET", "/api/me/rooms", nil, &list)
	if len(list.Rooms) != 1 || list.Rooms[0].Unread != 1 {
		t.Errorf("after read to 4 (then 2), unread = %+v, want 1", list.Rooms)
	}

	var page struct{ Messages []message }
	if st := bob.do("GET", "/api/rooms/"+g.ID+"/messages?limit=2", nil, &page); st != 200 || len(page.Messages) != 2 || page.Messages[0].Seq != 5 || page.Messages[1].Seq != 4 {
		t.Errorf("newest page = %d %+v, want seqs 5,4", st, page.Messages)
	}
	bob.do("GET", "/api/rooms/"+g.ID+"/messages?before=4&limit=10", nil, &page)
	if got := seqs(page.Messages); got != "3,2,1" {
		t.Errorf("before=4 page = %s, want 3,2,1", got)
	}
	bob.do("GET", "/api/rooms/"+g.ID+"/messages?after=2&limit=2", nil, &page)
	if got := seqs(page.Messages); got != "3,4" {
		t.Errorf("after=2 page = %s, want 3,4", got)
	}

	// Direct rooms are unique per pair.
	var d1, d2 room
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "direct", "peer": bobUser.ID}, &d1); st != http.StatusCreated || d1.MemberCount != 2 {
		t.Errorf("create direct = %d %+v", st, d1)
	}
	if st := bob.do("POST", "/api/rooms", map[string]string{"kind": "direct", "peer": aliceUser.ID}, &d2); st != http.StatusOK || d2.ID != d1.ID {
		t.Errorf("direct again = %d %s, want 200 %s", st, d2.ID, d1.ID)
	}
	var seen struct {
		ID   string `json:"id"`
		Peer *user  `json:"peer"`
	}
	if st := bob.do("GET", "/api/rooms/"+d1.ID, nil, &seen); st != 200 || seen.Peer == nil || *seen.Peer != aliceUser {
		t.Errorf("bob's view of the direct room = %d %+v, want peer %+v", st, seen, aliceUser)
	}
	if st := alice.do("GET", "/api/rooms/"+d1.ID, nil, &seen); st != 200 || seen.Peer == nil || *seen.Peer != bobUser {
		t.Errorf("alice's view of the direct room = %d %+v, want peer %+v", st, seen, bobUser)
	}
	// To anyone else, the direct room does not exist, whatever the route.
	carol, _ := mustSignUp(t, m.Addr(), "carol")
	for _, probe := range []struct{ method, path, body string }{
		{"GET", "/api/rooms/" + d1.ID, ""},
		{"GET", "/api/rooms/" + d1.ID + "/messages", ""},
		{"POST", "/api/rooms/" + d1.ID + "/messages", `{"body":"hi"}`},
		{"PUT", "/api/rooms/" + d1.ID + "/read", `{"seq":1}`},
		{"POST", "/api/rooms/" + d1.ID + "/members", ""},
	} {
		var e apiError
		var body any
		if probe.body != "" {
			body = probe.body
		}
		if st := carol.do(probe.method, probe.path, body, &e); st != http.StatusNotFound || e.Error.Code != "not_found" {
			t.Errorf("outsider %s %s = %d %+v, want 404 not_found", probe.method, probe.path, st, e.Error)
		}
	}

	// Leaving takes the room off the list and forbids its history.
	if st := bob.do("DELETE", "/api/rooms/"+g.ID+"/members/me", nil, nil); st != http.StatusNoContent {
		t.Errorf("leave = %d, want 204", st)
	}
	var e apiError
	if st := bob.do("GET", "/api/rooms/"+g.ID+"/messages", nil, &e); st != http.StatusForbidden || e.Error.Code != "forbidden" {
		t.Errorf("history after leave = %d %+v, want 403 forbidden", st, e)
	}
	bob.do("GET", "/api/me/rooms", nil, &list)
	if len(list.Rooms) != 1 || list.Rooms[0].Room.ID != d1.ID {
		t.Errorf("bob's rooms after leave = %+v, want only the direct room", list.Rooms)
	}
}

func TestAPIRoomFull(t *testing.T) {
	m := MustOpenMain(t)
	owner, _ := mustSignUp(t, m.Addr(), "owner")
	guest, _ := mustSignUp(t, m.Addr(), "guest")
	late, _ := mustSignUp(t, m.Addr(), "late")
	var r room
	owner.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "two seats", "capacity": 2}, &r)
	if st := guest.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("guest join = %d", st)
	}
	var e apiError
	if st := late.do("POST", "/api/rooms/"+r.ID+"/members", nil, &e); st != http.StatusConflict || e.Error.Code != "room_full" {
		t.Errorf("join full room = %d %+v, want 409 room_full", st, e)
	}
}

// TestAPIBadInput checks that every kind of bad input gets its status and
// JSON error code, never a 500.
func TestAPIBadInput(t *testing.T) {
	m := MustOpenMain(t)
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	outsider, _ := mustSignUp(t, m.Addr(), "outsider")
	var r room
	alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "t"}, &r)
	anon := newClient(t, m.Addr())
	badToken := newClient(t, m.Addr())
	badToken.token = "pt_not-a-token"
	msgs := "/api/rooms/" + r.ID + "/messages"

	tests := []struct {
		name       string
		c          *client
		method     string
		path       string
		body       any
		wantStatus int
		wantCode   string
	}{
		{"malformed JSON", alice, "POST", msgs, `{"body":`, 400, "invalid"},
		{"not an object", alice, "POST", msgs, `[1,2]`, 400, "invalid"},
		{"empty body", alice, "POST", msgs, ``, 400, "invalid"},
		{"wrong type", alice, "POST", msgs, `{"body":42}`, 400, "invalid"},
		{"unknown field", alice, "POST", msgs, `{"body":"x","extra":1}`, 400, "invalid"},
		{"trailing data", alice, "POST", msgs, `{"body":"x"} {}`, 400, "invalid"},
		{"empty message", alice, "POST", msgs, `{"body":""}`, 400, "invalid"},
		{"message over 4 KiB", alice, "POST", msgs, map[string]string{"body": strings.Repeat("a", 4097)}, 413, "too_large"},
		{"request over the cap", alice, "POST", msgs, `{"body":"` + strings.Repeat("a", 1<<20) + `"}`, 413, "too_large"},
		{"invalid UTF-8", alice, "POST", msgs, []byte("{\"body\":\"\xff\xfe\"}"), 400, "invalid"},
		{"client_id too long", alice, "POST", msgs, map[string]string{"body": "x", "client_id": strings.Repeat("k", 65)}, 400, "invalid"},
		{"unknown room", alice, "POST", "/api/rooms/nope/messages", `{"body":"x"}`, 404, "not_found"},
		{"non-member send", outsider, "POST", msgs, `{"body":"x"}`, 403, "forbidden"},
		{"non-member history", outsider, "GET", msgs, nil, 403, "forbidden"},
		{"non-member read", outsider, "PUT", "/api/rooms/" + r.ID + "/read", `{"seq":1}`, 403, "forbidden"},
		{"unknown room history", alice, "GET", "/api/rooms/nope/messages", nil, 404, "not_found"},
		{"limit zero", alice, "GET", msgs + "?limit=0", nil, 400, "invalid"},
		{"limit too big", alice, "GET", msgs + "?limit=101", nil, 400, "invalid"},
		{"limit not a number", alice, "GET", msgs + "?limit=ten", nil, 400, "invalid"},
		{"before and after", alice, "GET", msgs + "?before=5&after=1", nil, 400, "invalid"},
		{"negative after", alice, "GET", msgs + "?after=-1", nil, 400, "invalid"},
		{"before zero", alice, "GET", msgs + "?before=0", nil, 400, "invalid"},
		{"bad cursor", alice, "GET", "/api/me/rooms?cursor=no-dot", nil, 400, "invalid"},
		{"read without seq", alice, "PUT", "/api/rooms/" + r.ID + "/read", `{}`, 400, "invalid"},
		{"read negative seq", alice, "PUT", "/api/rooms/" + r.ID + "/read", `{"seq":-3}`, 400, "invalid"},
		{"no token", anon, "GET", "/api/me", nil, 401, "unauthorized"},
		{"wrong token", badToken, "GET", "/api/me/rooms", nil, 401, "unauthorized"},
		{"short name", anon, "POST", "/api/users", `{"name":"ab","password":"longenough"}`, 400, "invalid"},
		{"name with space", anon, "POST", "/api/users", `{"name":"a b c","password":"longenough"}`, 400, "invalid"},
		{"short password", anon, "POST", "/api/users", `{"name":"carol","password":"short"}`, 400, "invalid"},
		{"name taken", anon, "POST", "/api/users", `{"name":"alice","password":"longenough"}`, 409, "name_taken"},
		{"wrong password", anon, "POST", "/api/tokens", `{"name":"alice","password":"wrong password"}`, 401, "unauthorized"},
		{"unknown user login", anon, "POST", "/api/tokens", `{"name":"nobody","password":"whatever1"}`, 401, "unauthorized"},
		{"bad kind", alice, "POST", "/api/rooms", `{"kind":"party","title":"x"}`, 400, "invalid"},
		{"title too long", alice, "POST", "/api/rooms", map[string]string{"kind": "group", "title": strings.Repeat("é", 101)}, 400, "invalid"},
		{"negative capacity", alice, "POST", "/api/rooms", `{"kind":"group","title":"x","capacity":-1}`, 400, "invalid"},
		{"direct with self", alice, "POST", "/api/rooms", map[string]string{"kind": "direct", "peer": ""}, 400, "invalid"},
		{"direct unknown peer", alice, "POST", "/api/rooms", `{"kind":"direct","peer":"nobody"}`, 404, "not_found"},
		{"join unknown room", alice, "POST", "/api/rooms/nope/members", nil, 404, "not_found"},
		{"unknown user by name", alice, "GET", "/api/users/nobody", nil, 404, "not_found"},
		{"user lookup without token", anon, "GET", "/api/users/alice", nil, 401, "unauthorized"},
		{"unknown route", alice, "GET", "/api/nothing", nil, 404, "not_found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var e apiError
			st := tt.c.do(tt.method, tt.path, tt.body, &e)
			if st != tt.wantStatus || e.Error.Code != tt.wantCode || e.Error.Message == "" {
				t.Errorf("%s %s = %d %+v, want %d %q", tt.method, tt.path, st, e.Error, tt.wantStatus, tt.wantCode)
			}
		})
	}
}

func seqs(ms []message) string {
	var b strings.Builder
	for i, m := range ms {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprint(&b, m.Seq)
	}
	return b.String()
}

// TestOpenFailureCloses checks that a node whose Open fails part way (here:
// the STOMP address is taken) closes cleanly instead of hanging.
func TestOpenFailureCloses(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	m := &Main{Config: Config{
		Addr: "127.0.0.1:0", Data: t.TempDir(), Sync: "normal", TokenTTL: time.Hour,
		MaxBody: 4096, KDF: testKDF, StompAddr: busy.Addr().String(),
	}}
	if err := m.Open(context.Background()); err == nil {
		t.Fatal("Open() with a busy --stomp-addr succeeded, want an error")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- m.Close(ctx) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		t.Fatal("Close() after a failed Open did not return")
	}
}

// TestRESTSendLimit checks the per-user limit on REST writes end to end:
// past the burst a user gets 429 rate_limited with Retry-After, while
// another user still sends. The rate is low enough that no token comes
// back during the test, however slow the machine.
func TestRESTSendLimit(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.RestSendRate = 0.1 }) // bursts of 1
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	bob, _ := mustSignUp(t, m.Addr(), "bob")
	var g room
	if st := alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "general"}, &g); st != http.StatusCreated {
		t.Fatalf("create room: status %d", st)
	}
	if st := bob.do("POST", "/api/rooms/"+g.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: status %d", st)
	}
	path := "/api/rooms/" + g.ID + "/messages"

	// Creating the room took alice's only token: sends share it.
	resp := alice.post(path, map[string]string{"body": "too fast"})
	var body apiError
	if err := decodeJSON(resp.Body, &body); err != nil {
		t.Fatalf("decode 429 body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || body.Error.Code != "rate_limited" || body.Error.Message == "" {
		t.Errorf("alice's send after creating a room = %d %+v, want 429 rate_limited", resp.StatusCode, body)
	}
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 10 {
		t.Errorf("Retry-After = %q, want whole seconds from 1 to 10", resp.Header.Get("Retry-After"))
	}

	if st := bob.do("POST", path, map[string]string{"body": "hello"}, nil); st != http.StatusCreated {
		t.Errorf("bob's send while alice is limited = %d, want 201", st)
	}
	if st := bob.do("POST", path, map[string]string{"body": "again"}, nil); st != http.StatusTooManyRequests {
		t.Errorf("bob's second send = %d, want 429", st)
	}
}

// post sends a JSON POST and returns the whole response; the caller
// closes its body.
func (c *client) post(path string, body any) *http.Response {
	c.t.Helper()
	req, err := http.NewRequest("POST", c.base+path, jsonReader(body))
	if err != nil {
		c.t.Fatalf("new request: %v", err)
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("POST %s: %v", path, err)
	}
	return resp
}

// TestRESTSendRateFlag checks --rest-send-rate: 20 by default, set by its
// environment variable, 0 for no limit, and a negative rate refused.
func TestRESTSendRateFlag(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		env  map[string]string
		want float64
	}{
		{"default", nil, nil, 20},
		{"flag", []string{"--rest-send-rate", "5"}, nil, 5},
		{"environment", nil, map[string]string{"PARLEY_REST_SEND_RATE": "0"}, 0},
		{"flag wins", []string{"--rest-send-rate", "50"}, map[string]string{"PARLEY_REST_SEND_RATE": "0"}, 50},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if cfg := mustParseServe(t, tt.args, tt.env); cfg.RestSendRate != tt.want {
				t.Errorf("parseFlags(%q, %v): RestSendRate = %g, want %g", tt.args, tt.env, cfg.RestSendRate, tt.want)
			}
		})
	}
	wantOpenRefused(t, Config{RestSendRate: -1}, "--rest-send-rate")
}

// TestRESTReadLimit checks --rest-read-rate end to end: a PUT read that
// moves the position (a client marking each message it shows) is never
// limited, however many; one that moves nothing writes nothing to the
// store, and past the burst gets 429 rate_limited with Retry-After. The
// rate is low enough that no token comes back during the test.
func TestRESTReadLimit(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.RestReadRate, c.RestSendRate = 0.1, 0 }) // bursts of 1
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	bob, _ := mustSignUp(t, m.Addr(), "bob")
	var g room
	if st := alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "general"}, &g); st != http.StatusCreated {
		t.Fatalf("create room: status %d", st)
	}
	if st := bob.do("POST", "/api/rooms/"+g.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: status %d", st)
	}
	read := "/api/rooms/" + g.ID + "/read"
	const n = 60
	for i := 1; i <= n; i++ {
		if st := alice.do("POST", "/api/rooms/"+g.ID+"/messages", map[string]string{"body": fmt.Sprint("m", i)}, nil); st != http.StatusCreated {
			t.Fatalf("send %d: status %d", i, st)
		}
		if st := bob.do("PUT", read, map[string]int64{"seq": int64(i)}, nil); st != http.StatusNoContent {
			t.Fatalf("bob's PUT read of message %d = %d, want 204: a read that moves is never limited", i, st)
		}
	}
	writes := metric(t, m, `parley_store_queries_total{kind="mark_read"}`)
	// The same position again moves nothing: a token, then 429.
	if st := bob.do("PUT", read, map[string]int64{"seq": n}, nil); st != http.StatusNoContent {
		t.Fatalf("first idle PUT read = %d, want 204", st)
	}
	req, _ := http.NewRequest("PUT", "http://"+m.Addr()+read, jsonReader(map[string]int64{"seq": n + 100})) // capped: moves nothing
	req.Header.Set("Authorization", "Bearer "+bob.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body apiError
	if err := decodeJSON(resp.Body, &body); err != nil {
		t.Fatalf("decode 429 body: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || body.Error.Code != "rate_limited" {
		t.Errorf("second idle PUT read = %d %+v, want 429 rate_limited", resp.StatusCode, body)
	}
	if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err != nil || ra < 1 || ra > 10 {
		t.Errorf("Retry-After = %q, want whole seconds from 1 to 10", resp.Header.Get("Retry-After"))
	}
	if got := metric(t, m, `parley_store_queries_total{kind="mark_read"}`); got != writes {
		t.Errorf("%v store writes for PUT reads that moved nothing, want 0", got-writes)
	}
	// Moving still works while the idle budget is spent.
	alice.do("POST", "/api/rooms/"+g.ID+"/messages", map[string]string{"body": "one more"}, nil)
	if st := bob.do("PUT", read, map[string]int64{"seq": n + 1}, nil); st != http.StatusNoContent {
		t.Errorf("PUT read of a new message while limited = %d, want 204", st)
	}
}
