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
