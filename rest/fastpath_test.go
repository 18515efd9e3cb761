package rest_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHotRoutesAsMux: the routes ServeHTTP serves without asking its
// ServeMux (the room list, history pages) answer every path exactly as
// the mux does, redirects and refusals included: for a member, a
// non-member, no token and a revoked token.
func TestHotRoutesAsMux(t *testing.T) {
	e := newEnv(t, nil)
	ann, bob, gone := e.mustSignUp("ann"), e.mustSignUp("bob"), e.mustSignUp("cyd")
	room := e.mustCreateRoom(ann, "Hot")
	for i := range 3 {
		e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/messages", ann, map[string]any{"body": "hello " + string(rune('a'+i))}), "send", http.StatusCreated, nil)
	}
	e.mustExpect(e.do("DELETE", "/api/tokens/current", gone, nil), "logout", http.StatusNoContent, nil)
	id := room.ID
	paths := []string{
		"/api/me/rooms", "/api/me/rooms?limit=1", "/api/me/rooms/", "/api/me//rooms", "/api/me/./rooms",
		"/api/rooms/" + id + "/messages", "/api/rooms/" + id + "/messages?limit=2&before=3",
		"/api/rooms/" + id + "/messages?after=1", "/api/rooms/" + id + "/messages?changed_after=0",
		"/api/rooms/" + id + "/messages?q=hello", "/api/rooms/" + id + "/messages?limit=x",
		"/api/rooms/" + id + "/messages/", "/api/rooms/" + id + "//messages", "/api/rooms//messages",
		"/api/rooms/./messages", "/api/rooms/../messages", "/api/rooms/%2e%2e/messages",
		"/api/rooms/a%2Fb/messages", "/api/rooms/a%20b/messages", "/api/rooms/nope/messages",
		"/api/rooms/x/y/messages", "/api/rooms/messages",
	}
	for _, tok := range []struct{ name, token string }{{"member", ann}, {"non-member", bob}, {"no token", ""}, {"revoked", gone}} {
		for _, p := range paths {
			got, want := serve(e.h, p, tok.token), serve(e.h.MuxForTest(), p, tok.token)
			if got.Code != want.Code || got.Body.String() != want.Body.String() ||
				got.Header().Get("Location") != want.Header().Get("Location") ||
				got.Header().Get("WWW-Authenticate") != want.Header().Get("WWW-Authenticate") {
				t.Errorf("%s: GET %s = %d %q (Location %q), the mux answers %d %q (Location %q)", tok.name, p,
					got.Code, got.Body, got.Header().Get("Location"), want.Code, want.Body, want.Header().Get("Location"))
			}
		}
	}
}

// TestHotRoutesRevokedToken: a token revoked after it was served a room
// list and a history page is refused on its next request, though the
// memo holds both answers.
func TestHotRoutesRevokedToken(t *testing.T) {
	e := newEnv(t, nil)
	ann := e.mustSignUp("ann")
	room := e.mustCreateRoom(ann, "Hot")
	e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/messages", ann, map[string]any{"body": "hello"}), "send", http.StatusCreated, nil)
	paths := []string{"/api/me/rooms", "/api/rooms/" + room.ID + "/messages"}
	for _, p := range paths {
		e.mustExpect(serve(e.h, p, ann), "GET "+p, http.StatusOK, nil)
	}
	e.mustExpect(e.do("DELETE", "/api/tokens/current", ann, nil), "logout", http.StatusNoContent, nil)
	for _, p := range paths {
		e.mustExpect(serve(e.h, p, ann), "GET "+p+" with the revoked token", http.StatusUnauthorized, nil)
	}
}

func serve(h http.Handler, path, token string) *httptest.ResponseRecorder {
	req := httptest.NewRequest("GET", path, nil)
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}
