package rest_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"parley"
	"parley/ratelimit"
	"parley/rest"
)

// TestAPIKeyScopes: an API key calls the routes its scopes allow, gets 403
// forbidden on the others and on the routes of a person's account, and an
// unknown key is 401 with WWW-Authenticate.
func TestAPIKeyScopes(t *testing.T) {
	fc := newFakeChat()
	e := &env{t: t, h: rest.New(rest.Config{Chat: fc})}
	alice := e.mustSignUp("alice")
	var room struct{ ID string }
	e.mustExpect(e.do("POST", "/api/rooms", alice, map[string]any{"kind": "group", "title": "ops"}), "create room", http.StatusCreated, &room)
	poster, _ := fc.addKey("poster", parley.ScopePost, parley.ScopeRooms)
	reader, _ := fc.addKey("reader", parley.ScopeHistory)
	e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/members", poster, nil), "join with rooms", http.StatusCreated, nil)

	msgs := "/api/rooms/" + room.ID + "/messages"
	for _, tc := range []struct {
		name, method, path, token string
		body                      any
		want                      int
	}{
		{"post with post", "POST", msgs, poster, map[string]string{"body": "deploy done", "client_id": "c1"}, http.StatusCreated},
		{"post again, same client_id", "POST", msgs, poster, map[string]string{"body": "deploy done", "client_id": "c1"}, http.StatusOK},
		{"read without history", "GET", msgs, poster, nil, http.StatusForbidden},
		{"post without post", "POST", msgs, reader, map[string]string{"body": "x"}, http.StatusForbidden},
		{"create a room without rooms", "POST", "/api/rooms", reader, map[string]any{"kind": "group", "title": "t"}, http.StatusForbidden},
		{"me with any key", "GET", "/api/me", reader, nil, http.StatusOK},
		{"a person's export", "GET", "/api/me/export", poster, nil, http.StatusForbidden},
		{"a person's deletion", "DELETE", "/api/me", poster, map[string]string{"password": "x"}, http.StatusForbidden},
		{"a person's logout", "DELETE", "/api/tokens", poster, nil, http.StatusForbidden},
		{"unknown key", "GET", "/api/me", "pk_nope_secret", nil, http.StatusUnauthorized},
	} {
		rec := e.do(tc.method, tc.path, tc.token, tc.body)
		if rec.Code != tc.want {
			t.Errorf("%s: %s %s = %d %s, want %d", tc.name, tc.method, tc.path, rec.Code, rec.Body, tc.want)
		}
		if rec.Code == http.StatusUnauthorized && rec.Header().Get("WWW-Authenticate") == "" {
			t.Errorf("%s: 401 without WWW-Authenticate", tc.name)
		}
	}
}

// TestHook: POST /api/hooks/{key} posts into the room of a room-bound key
// with the scope post, from JSON ("text" or "body") or text/plain; any
// other key, or none, is 404; and the room-bound key is refused in other
// rooms.
func TestHook(t *testing.T) {
	fc := newFakeChat()
	e := &env{t: t, h: rest.New(rest.Config{Chat: fc})}
	alice := e.mustSignUp("alice")
	var room, other struct{ ID string }
	e.mustExpect(e.do("POST", "/api/rooms", alice, map[string]any{"kind": "group", "title": "alerts"}), "create room", http.StatusCreated, &room)
	e.mustExpect(e.do("POST", "/api/rooms", alice, map[string]any{"kind": "group", "title": "other"}), "create room", http.StatusCreated, &other)
	hook, _ := fc.addKey("hook", parley.ScopePost, parley.ScopeRooms)
	fc.apiKeys[hook].Key.RoomID = room.ID
	reader, _ := fc.addKey("reader", parley.ScopeHistory)
	fc.apiKeys[reader].Key.RoomID = room.ID
	free, _ := fc.addKey("free", parley.ScopePost)
	e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/members", hook, nil), "hook joins", http.StatusCreated, nil)

	var m struct{ Body string }
	e.mustExpect(e.do("POST", "/api/hooks/"+hook, "", map[string]string{"text": "disk full"}), "hook with text", http.StatusCreated, &m)
	if m.Body != "disk full" {
		t.Errorf("hook message body = %q", m.Body)
	}
	for _, tc := range []struct {
		name, path string
		want       int
	}{
		{"no such key", "/api/hooks/pk_nope_x", http.StatusNotFound},
		{"not a key", "/api/hooks/hello", http.StatusNotFound},
		{"a key bound to no room", "/api/hooks/" + free, http.StatusNotFound},
		{"a key without post", "/api/hooks/" + reader, http.StatusNotFound},
	} {
		if rec := e.do("POST", tc.path, "", map[string]string{"text": "x"}); rec.Code != tc.want {
			t.Errorf("%s: POST %s = %d %s, want %d", tc.name, tc.path, rec.Code, rec.Body, tc.want)
		}
	}
	if rec := e.do("POST", "/api/rooms/"+other.ID+"/members", hook, nil); rec.Code != http.StatusForbidden {
		t.Errorf("the room-bound key joins another room = %d, want 403", rec.Code)
	}
}

// TestAPIKeyLimit: each API key has its own budget of calls on every
// route, the incoming webhook included: past its burst a key is 429 with
// Retry-After while another key and a person are not held back.
func TestAPIKeyLimit(t *testing.T) {
	fc := newFakeChat()
	limit := ratelimit.New(ratelimit.Config{Rate: 1, Burst: 2})
	e := &env{t: t, h: rest.New(rest.Config{Chat: fc, KeyLimit: limit})}
	alice := e.mustSignUp("alice")
	var room struct{ ID string }
	e.mustExpect(e.do("POST", "/api/rooms", alice, map[string]any{"kind": "group", "title": "ops"}), "create room", http.StatusCreated, &room)
	busy, _ := fc.addKey("busy", parley.ScopeRooms)
	calm, _ := fc.addKey("calm", parley.ScopeRooms)
	for i := range 2 {
		e.mustExpect(e.do("GET", "/api/me", busy, nil), fmt.Sprint("call ", i), http.StatusOK, nil)
	}
	rec := e.do("GET", "/api/rooms/"+room.ID, busy, nil)
	if rec.Code != http.StatusTooManyRequests || rec.Header().Get("Retry-After") == "" || !strings.Contains(rec.Body.String(), `"rate_limited"`) {
		t.Errorf("third call = %d %q (Retry-After %q), want 429 rate_limited with Retry-After", rec.Code, rec.Body, rec.Header().Get("Retry-After"))
	}
	e.mustExpect(e.do("GET", "/api/me", calm, nil), "another key", http.StatusOK, nil)
	for range 3 {
		e.mustExpect(e.do("GET", "/api/me", alice, nil), "a person", http.StatusOK, nil)
	}

	hook, _ := fc.addKey("hook", parley.ScopePost)
	fc.apiKeys[hook].Key.RoomID = room.ID
	e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/members", alice, nil), "", http.StatusOK, nil)
	codes := []int{}
	for i := range 3 {
		codes = append(codes, e.do("POST", "/api/hooks/"+hook, "", map[string]string{"text": fmt.Sprint(i)}).Code)
	}
	if codes[2] != http.StatusTooManyRequests {
		t.Errorf("incoming webhook past the key's burst: %v, want the third 429", codes)
	}
}

// TestAddMemberRoute: POST /api/rooms/{id}/members/{user_id} adds a user
// (201, then 200), as the owner or an admin, or as an API key with the
// scope rooms whose bot moderates the room.
func TestAddMemberRoute(t *testing.T) {
	fc := newFakeChat()
	e := &env{t: t, h: rest.New(rest.Config{Chat: fc})}
	alice := e.mustSignUp("alice")
	bob := e.mustSignUp("bob")
	var bobUser struct{ ID string }
	e.mustExpect(e.do("GET", "/api/me", bob, nil), "bob", http.StatusOK, &bobUser)
	var room struct{ ID string }
	e.mustExpect(e.do("POST", "/api/rooms", alice, map[string]any{"kind": "group", "title": "ops"}), "create room", http.StatusCreated, &room)
	path := "/api/rooms/" + room.ID + "/members/" + bobUser.ID
	var m struct {
		User struct{ ID string }
		Role string
	}
	e.mustExpect(e.do("POST", path, alice, nil), "add", http.StatusCreated, &m)
	if m.User.ID != bobUser.ID || m.Role != parley.RoleMember {
		t.Errorf("added member = %+v", m)
	}
	e.mustExpect(e.do("POST", path, alice, nil), "add again", http.StatusOK, nil)
	e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/members/"+parley.NewID(), alice, nil), "unknown user", http.StatusNotFound, nil)
	carol := e.mustSignUp("carol")
	var carolUser struct{ ID string }
	e.mustExpect(e.do("GET", "/api/me", carol, nil), "carol", http.StatusOK, &carolUser)
	e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/members/"+carolUser.ID, bob, nil), "a plain member adds", http.StatusForbidden, nil)

	reader, _ := fc.addKey("reader", parley.ScopeHistory)
	e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/members/"+carolUser.ID, reader, nil), "a key without rooms", http.StatusForbidden, nil)
	ops, _ := fc.addKey("ops", parley.ScopeRooms)
	var own struct{ ID string }
	e.mustExpect(e.do("POST", "/api/rooms", ops, map[string]any{"kind": "group", "title": "bot room"}), "bot creates a room", http.StatusCreated, &own)
	e.mustExpect(e.do("POST", "/api/rooms/"+own.ID+"/members/"+carolUser.ID, ops, nil), "the bot adds carol", http.StatusCreated, nil)
	e.mustExpect(e.do("GET", "/api/rooms/"+own.ID, carol, nil), "carol sees the bot's room", http.StatusOK, nil)
}
