package rest_test

import (
	"net/http"
	"testing"

	"parley"
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
