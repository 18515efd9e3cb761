package rest_test

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"

	"parley"
	"parley/chat"
)

// TestMentionsREST: over the real stack, a sent message carries its
// mentions; the room list carries each member's unread mentions and
// level; PUT notifications sets the level; bad input gets its status
// and stores nothing.
func TestMentionsREST(t *testing.T) {
	ctx := context.Background()
	svc, h := openStack(t)
	ann, tokA := signUp(t, svc, "ann")
	bob, tokB := signUp(t, svc, "bob")
	_, tokC := signUp(t, svc, "carol")
	signUp(t, svc, "dave")
	room, _, err := svc.CreateRoom(ctx, ann, chat.NewRoom{Kind: parley.KindGroup, Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	must(t)(svc.Join(ctx, bob, room.ID))
	call := func(method, path, tok, body string) *httptest.ResponseRecorder {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	send := func(tok, text string) *httptest.ResponseRecorder {
		t.Helper()
		b, _ := json.Marshal(map[string]string{"body": text})
		return call("POST", "/api/rooms/"+room.ID+"/messages", tok, string(b))
	}
	entry := func(tok string) (mentions int64, level string) {
		t.Helper()
		w := call("GET", "/api/me/rooms", tok, "")
		var list struct {
			Rooms []struct {
				Room          struct{ ID string }
				Mentions      int64  `json:"mentions"`
				Notifications string `json:"notifications"`
			} `json:"rooms"`
		}
		if err := json.Unmarshal(w.Body.Bytes(), &list); err != nil || len(list.Rooms) != 1 {
			t.Fatalf("GET /api/me/rooms = %d %s", w.Code, w.Body)
		}
		return list.Rooms[0].Mentions, list.Rooms[0].Notifications
	}

	if w := send(tokA, "hi @bob"); w.Code != 201 || !strings.Contains(w.Body.String(), `"mentions":["`+bob.ID+`"]`) {
		t.Errorf("send @bob = %d %s, want 201 with mentions [bob]", w.Code, w.Body)
	}
	if w := send(tokA, "no one"); w.Code != 201 || strings.Contains(w.Body.String(), `"mentions"`) {
		t.Errorf("send without mentions = %d %s, want 201 without mentions", w.Code, w.Body)
	}
	if n, level := entry(tokB); n != 1 || level != "all" {
		t.Errorf("bob's entry = %d mentions, level %q; want 1, all", n, level)
	}
	if n, level := entry(tokA); n != 0 || level != "all" {
		t.Errorf("ann's entry = %d mentions, level %q; want 0, all", n, level)
	}

	for _, tc := range []struct {
		name, tok, body string
		status          int
		text            string
	}{
		{"a non-member", tokA, "hey @dave", 400, "dave is not a member of this room: invite them first"},
		{"@room by a member", tokB, "@room hello", 403, "only the room's owner and admins may mention @room"},
		{"too many names", tokA, strings.Repeat("@abc", 0) + manyNames(parley.MaxMentions+1), 400, "at most 50 distinct names"},
	} {
		if w := send(tc.tok, tc.body); w.Code != tc.status || !strings.Contains(w.Body.String(), tc.text) {
			t.Errorf("%s: %d %s, want %d saying %q", tc.name, w.Code, w.Body, tc.status, tc.text)
		}
	}
	// A flood of @room: the burst passes, then 429 with Retry-After.
	for i := range chat.RoomMentionBurst {
		if w := send(tokA, "@room look"); w.Code != 201 {
			t.Fatalf("@room %d = %d %s, want 201", i+1, w.Code, w.Body)
		}
	}
	if w := send(tokA, "@room again"); w.Code != 429 || w.Header().Get("Retry-After") == "" {
		t.Errorf("@room past the burst = %d %s (Retry-After %q), want 429 with Retry-After", w.Code, w.Body, w.Header().Get("Retry-After"))
	}
	page := call("GET", "/api/rooms/"+room.ID+"/messages?limit=50", tokA, "")
	if n := strings.Count(page.Body.String(), `"seq":`); n != 2+chat.RoomMentionBurst {
		t.Errorf("history holds %d messages, want %d: the refused sends store nothing", n, 2+chat.RoomMentionBurst)
	}
	if n, _ := entry(tokB); n != 1+int64(chat.RoomMentionBurst) {
		t.Errorf("bob's mentions = %d, want %d", n, 1+chat.RoomMentionBurst)
	}

	// Levels.
	path := "/api/rooms/" + room.ID + "/notifications"
	if w := call("PUT", path, tokB, `{"level":"loud"}`); w.Code != 400 {
		t.Errorf("level loud = %d %s, want 400", w.Code, w.Body)
	}
	if w := call("PUT", path, tokC, `{"level":"none"}`); w.Code != 403 {
		t.Errorf("level of a non-member = %d %s, want 403", w.Code, w.Body)
	}
	if w := call("PUT", path, tokB, `{"level":"none"}`); w.Code != 200 || !strings.Contains(w.Body.String(), `"level":"none"`) {
		t.Errorf("level none = %d %s, want 200", w.Code, w.Body)
	}
	if n, level := entry(tokB); n != 0 || level != "none" {
		t.Errorf("bob's entry at none = %d mentions, level %q; want 0, none", n, level)
	}
	if w := call("PUT", path, tokB, `{"level":"mentions"}`); w.Code != 200 {
		t.Errorf("level mentions = %d %s, want 200", w.Code, w.Body)
	}
	if n, level := entry(tokB); n != 1+int64(chat.RoomMentionBurst) || level != "mentions" {
		t.Errorf("bob's entry at mentions = %d mentions, level %q", n, level)
	}
	// Reading the room clears the count.
	if w := call("PUT", "/api/rooms/"+room.ID+"/read", tokB, `{"seq":100}`); w.Code >= 300 {
		t.Fatalf("mark read = %d %s", w.Code, w.Body)
	}
	if n, _ := entry(tokB); n != 0 {
		t.Errorf("bob's mentions after reading = %d, want 0", n)
	}
}

// manyNames is a text that mentions n distinct names.
func manyNames(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString("@name")
		b.WriteByte(byte('a' + i%26))
		b.WriteByte(byte('a' + i/26))
		b.WriteByte(' ')
	}
	return b.String()
}
