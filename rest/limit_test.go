package rest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"parley/ratelimit"
	"parley/rest"
)

// clock is a fake time source for the limiter.
type clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// env is a rest.Handler over a fresh fake chat service.
type env struct {
	t *testing.T
	h *rest.Handler
}

func newEnv(t *testing.T, limit rest.Limiter) *env {
	t.Helper()
	return &env{t: t, h: rest.New(rest.Config{Chat: newFakeChat(), SendLimit: limit})}
}

// do serves one request with a JSON body and returns the recorded answer.
func (e *env) do(method, path, token string, body any) *httptest.ResponseRecorder {
	e.t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		e.t.Fatalf("marshal: %v", err)
	}
	req := httptest.NewRequest(method, path, bytes.NewReader(data))
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	return rec
}

// mustExpect checks an answer's status, decoding its body into out.
func (e *env) mustExpect(rec *httptest.ResponseRecorder, what string, status int, out any) {
	e.t.Helper()
	if rec.Code != status {
		e.t.Fatalf("%s = %d %s, want %d", what, rec.Code, rec.Body, status)
	}
	if out != nil {
		if err := json.Unmarshal(rec.Body.Bytes(), out); err != nil {
			e.t.Fatalf("%s: decode %q: %v", what, rec.Body, err)
		}
	}
}

// mustSignUp registers name and returns a token.
func (e *env) mustSignUp(name string) string {
	e.t.Helper()
	creds := map[string]string{"name": name, "password": "correct horse"}
	e.mustExpect(e.do("POST", "/api/users", "", creds), "register "+name, http.StatusCreated, nil)
	var tok struct{ Token string }
	e.mustExpect(e.do("POST", "/api/tokens", "", creds), "login "+name, http.StatusCreated, &tok)
	return tok.Token
}

// roomRef is what a test keeps of a room it created.
type roomRef struct{ ID string }

// mustCreateRoom creates a group room titled title as token's user.
func (e *env) mustCreateRoom(token, title string) roomRef {
	e.t.Helper()
	var room roomRef
	e.mustExpect(e.do("POST", "/api/rooms", token, map[string]any{"kind": "group", "title": title}), "create room "+title, http.StatusCreated, &room)
	return room
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// expectLimited checks that rec is a 429 rate_limited with Retry-After.
func (e *env) expectLimited(rec *httptest.ResponseRecorder, what, retryAfter string) {
	e.t.Helper()
	var body errorBody
	e.mustExpect(rec, what, http.StatusTooManyRequests, &body)
	if body.Error.Code != "rate_limited" || body.Error.Message == "" {
		e.t.Errorf("%s: error = %+v, want code rate_limited with a message", what, body.Error)
	}
	if got := rec.Header().Get("Retry-After"); got != retryAfter {
		e.t.Errorf("%s: Retry-After = %q, want %q", what, got, retryAfter)
	}
	if got := rec.Header().Get("Content-Type"); got != "application/json" {
		e.t.Errorf("%s: Content-Type = %q, want application/json", what, got)
	}
}

func TestSendLimit(t *testing.T) {
	c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	e := newEnv(t, ratelimit.New(ratelimit.Config{Rate: 1, Burst: 3, Now: c.Now}))
	alice, bob := e.mustSignUp("alice"), e.mustSignUp("bob")

	room := e.mustCreateRoom(alice, "general")
	e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/members", bob, nil), "bob joins", http.StatusCreated, nil)
	send := "/api/rooms/" + room.ID + "/messages"
	for range 2 {
		e.mustExpect(e.do("POST", send, alice, map[string]string{"body": "hi"}), "alice sends within her burst", http.StatusCreated, nil)
	}
	e.expectLimited(e.do("POST", send, alice, map[string]string{"body": "too fast"}), "alice's fourth write", "1")
	// Sends and new rooms share the budget.
	e.expectLimited(e.do("POST", "/api/rooms", alice, map[string]any{"kind": "group", "title": "another"}), "alice creates a room when limited", "1")
	// What creates nothing new is not limited.
	e.mustExpect(e.do("PUT", "/api/rooms/"+room.ID+"/read", alice, map[string]int64{"seq": 2}), "alice marks read when limited", http.StatusNoContent, nil)
	e.mustExpect(e.do("GET", send, alice, nil), "alice reads history when limited", http.StatusOK, nil)

	// Another user has a budget of their own.
	for range 3 {
		e.mustExpect(e.do("POST", send, bob, map[string]string{"body": "hello"}), "bob sends while alice is limited", http.StatusCreated, nil)
	}

	c.Advance(time.Second)
	e.mustExpect(e.do("POST", send, alice, map[string]string{"body": "again"}), "alice sends a second later", http.StatusCreated, nil)
	e.expectLimited(e.do("POST", send, alice, map[string]string{"body": "too fast"}), "alice's next send", "1")

	var page struct{ Messages []struct{ Body string } }
	e.mustExpect(e.do("GET", send+"?limit=100", bob, nil), "history", http.StatusOK, &page)
	if len(page.Messages) != 6 {
		t.Errorf("room holds %d messages, want 6: refused sends store nothing", len(page.Messages))
	}
}

// TestSendLimitRetryAfter checks that Retry-After is the wait rounded up
// to whole seconds.
func TestSendLimitRetryAfter(t *testing.T) {
	for _, tt := range []struct {
		name       string
		rate       float64
		retryAfter string
	}{
		{"under a second rounds up to 1", 20, "1"},
		{"a fraction over rounds up", 0.4, "3"}, // 2.5 s
		{"whole seconds stay", 0.25, "4"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
			e := newEnv(t, ratelimit.New(ratelimit.Config{Rate: tt.rate, Burst: 1, Now: c.Now}))
			alice := e.mustSignUp("alice")
			room := e.mustCreateRoom(alice, "general")
			e.expectLimited(e.do("POST", "/api/rooms/"+room.ID+"/messages", alice, map[string]string{"body": "hi"}), "send", tt.retryAfter)
		})
	}
}

// TestReadLimit: read marks that move a position are never limited; those
// that move nothing take from a budget of their own (not the sends'), and
// past it get 429 with Retry-After until it refills.
func TestReadLimit(t *testing.T) {
	c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	e := &env{t: t, h: rest.New(rest.Config{Chat: newFakeChat(),
		SendLimit: ratelimit.New(ratelimit.Config{Rate: 1000, Now: c.Now}),
		ReadLimit: ratelimit.New(ratelimit.Config{Rate: 1, Burst: 2, Now: c.Now})})}
	alice, bob := e.mustSignUp("alice"), e.mustSignUp("bob")
	room := e.mustCreateRoom(alice, "general")
	e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/members", bob, nil), "bob joins", http.StatusCreated, nil)
	send, read := "/api/rooms/"+room.ID+"/messages", "/api/rooms/"+room.ID+"/read"
	for i := int64(1); i <= 10; i++ { // five times the burst, at no time apart
		e.mustExpect(e.do("POST", send, alice, map[string]string{"body": "hi"}), "alice sends", http.StatusCreated, nil)
		e.mustExpect(e.do("PUT", read, bob, map[string]int64{"seq": i}), "bob marks a newer message read", http.StatusNoContent, nil)
	}
	for range 2 {
		e.mustExpect(e.do("PUT", read, bob, map[string]int64{"seq": 10}), "bob repeats within the burst", http.StatusNoContent, nil)
	}
	e.expectLimited(e.do("PUT", read, bob, map[string]int64{"seq": 3}), "bob's third mark that moves nothing", "1")
	e.mustExpect(e.do("PUT", read, alice, map[string]int64{"seq": 10}), "alice has a budget of her own", http.StatusNoContent, nil)
	e.mustExpect(e.do("POST", send, alice, map[string]string{"body": "hi"}), "alice sends", http.StatusCreated, nil)
	e.mustExpect(e.do("PUT", read, bob, map[string]int64{"seq": 11}), "bob marks a new message while limited", http.StatusNoContent, nil)
	c.Advance(time.Second)
	e.mustExpect(e.do("PUT", read, bob, map[string]int64{"seq": 11}), "bob repeats once refilled", http.StatusNoContent, nil)
}
