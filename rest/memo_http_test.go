package rest_test

import (
	"net/http"
	"strconv"
	"testing"

	"parley"
)

// TestHotReadsFollowChanges: the room list and history pages, which the
// Handler serves again from its memo while nothing changed, show every
// send, edit and deletion at once, per user and per page, with the
// Content-Length of what they send.
func TestHotReadsFollowChanges(t *testing.T) {
	e := newEnv(t, nil)
	ann, bob := e.mustSignUp("ann"), e.mustSignUp("bob")
	room := e.mustCreateRoom(ann, "t")
	e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/members", bob, nil), "bob joins", http.StatusCreated, nil)
	history := "/api/rooms/" + room.ID + "/messages"

	type page struct{ Messages []parley.Message }
	type list struct {
		Rooms []struct {
			LastMessage *parley.Message `json:"last_message"`
			Unread      int64
		}
	}
	get := func(what, path, token string, out any) string {
		t.Helper()
		rec := e.do("GET", path, token, nil)
		e.mustExpect(rec, what, http.StatusOK, out)
		if got := rec.Header().Get("Content-Length"); got != strconv.Itoa(rec.Body.Len()) {
			t.Errorf("%s: Content-Length %s for %d bytes", what, got, rec.Body.Len())
		}
		again := e.do("GET", path, token, nil)
		if again.Body.String() != rec.Body.String() {
			t.Errorf("%s: asked again = %s, want %s", what, again.Body, rec.Body)
		}
		return rec.Body.String()
	}
	bodyOf := func(ms []parley.Message) []string {
		var out []string
		for _, m := range ms {
			out = append(out, m.Body)
		}
		return out
	}

	e.mustExpect(e.do("POST", history, ann, map[string]string{"body": "one"}), "send one", http.StatusCreated, nil)
	var p page
	first := get("history", history, ann, &p)
	if b := bodyOf(p.Messages); len(b) != 1 || b[0] != "one" {
		t.Fatalf("history = %q, want [one]", b)
	}
	if bobs := get("bob's history", history, bob, &p); bobs != first {
		t.Errorf("bob's history = %s, want ann's %s", bobs, first)
	}
	var l list
	get("bob's room list", "/api/me/rooms", bob, &l)
	if len(l.Rooms) != 1 || l.Rooms[0].LastMessage == nil || l.Rooms[0].LastMessage.Body != "one" || l.Rooms[0].Unread != 1 {
		t.Fatalf("bob's room list = %+v, want one room, last message one, 1 unread", l)
	}

	e.mustExpect(e.do("POST", history, ann, map[string]string{"body": "two"}), "send two", http.StatusCreated, nil)
	get("history after two", history, ann, &p)
	if b := bodyOf(p.Messages); len(b) != 2 || b[0] != "two" {
		t.Errorf("history after two = %q, want [two one]", b)
	}
	get("a page of one", history+"?limit=1", ann, &p)
	if b := bodyOf(p.Messages); len(b) != 1 || b[0] != "two" {
		t.Errorf("page of one = %q, want [two]", b)
	}
	get("bob's room list after two", "/api/me/rooms", bob, &l)
	if l.Rooms[0].LastMessage.Body != "two" || l.Rooms[0].Unread != 2 {
		t.Errorf("bob's room list after two = %+v, want last message two, 2 unread", l)
	}
	e.mustExpect(e.do("PUT", "/api/rooms/"+room.ID+"/read", bob, map[string]int64{"seq": 2}), "bob reads", http.StatusNoContent, nil)
	get("bob's room list after reading", "/api/me/rooms", bob, &l)
	if l.Rooms[0].Unread != 0 {
		t.Errorf("bob's room list after reading = %+v, want 0 unread", l)
	}

	e.mustExpect(e.do("PATCH", history+"/1", ann, map[string]string{"body": "uno"}), "edit", http.StatusOK, nil)
	get("history after the edit", history, bob, &p)
	if b := bodyOf(p.Messages); len(b) != 2 || b[1] != "uno" || p.Messages[1].EditedAt == nil {
		t.Errorf("history after the edit = %q (edited at %v), want [two uno], edited", b, p.Messages[1].EditedAt)
	}
	e.mustExpect(e.do("DELETE", history+"/2", ann, nil), "delete", http.StatusNoContent, nil)
	get("history after the deletion", history, bob, &p)
	if p.Messages[0].DeletedAt == nil || p.Messages[0].Body != "" {
		t.Errorf("history after the deletion = %+v, want the newest deleted", p.Messages[0])
	}
	get("bob's room list after the deletion", "/api/me/rooms", bob, &l)
	if l.Rooms[0].LastMessage.DeletedAt == nil {
		t.Errorf("bob's room list after the deletion = %+v, want its last message deleted", l.Rooms[0].LastMessage)
	}
}

// TestRoomListFastPath: the room list, which ServeHTTP routes without its
// mux when the path is plain, answers as the mux's route does (reached
// through an escaped spelling of the same path), and the mux still takes
// every other method and spelling.
func TestRoomListFastPath(t *testing.T) {
	e := newEnv(t, nil)
	ann := e.mustSignUp("ann")
	e.mustCreateRoom(ann, "t")
	plain := e.do("GET", "/api/me/rooms", ann, nil)
	escaped := e.do("GET", "/api/me/r%6Foms", ann, nil)
	if plain.Code != http.StatusOK || plain.Body.String() != escaped.Body.String() || plain.Header().Get("X-Request-Id") == "" {
		t.Errorf("GET /api/me/rooms = %d %s, by the mux %d %s; want the same 200 with a request id", plain.Code, plain.Body, escaped.Code, escaped.Body)
	}
	for _, tt := range []struct {
		method, path string
		token        string
		status       int
	}{
		{"GET", "/api/me/rooms", "", http.StatusUnauthorized},
		{"HEAD", "/api/me/rooms", ann, http.StatusOK},
		{"POST", "/api/me/rooms", ann, http.StatusMethodNotAllowed},
		{"GET", "/api/me/rooms/", ann, http.StatusNotFound},
	} {
		if rec := e.do(tt.method, tt.path, tt.token, nil); rec.Code != tt.status {
			t.Errorf("%s %s = %d %s, want %d", tt.method, tt.path, rec.Code, rec.Body, tt.status)
		}
	}
	if rec := e.do("GET", "/api/me//rooms", ann, nil); rec.Code/100 != 3 || rec.Header().Get("Location") != "/api/me/rooms" {
		t.Errorf("GET /api/me//rooms = %d, Location %q; want the mux's redirect to /api/me/rooms", rec.Code, rec.Header().Get("Location"))
	}
}
