package rest_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"parley"
)

// The fake's changes and search: the semantics of chat.Service over a
// store, the room's creator standing for its owner.

func (c *fakeChat) messageLocked(u parley.User, roomID string, seq int64) (*fakeRoom, *parley.Message, error) {
	if seq < 1 {
		return nil, nil, parley.Errorf(parley.CodeInvalid, "seq must be 1 or more")
	}
	fr, err := c.memberLocked(u, roomID)
	if err != nil {
		return nil, nil, err
	}
	if seq > int64(len(fr.msgs)) {
		return nil, nil, parley.Errorf(parley.CodeNotFound, "message not found")
	}
	return fr, &fr.msgs[seq-1], nil
}

// repeatLocked answers a change whose key the room holds (ok): the key's
// message as it is now, or the conflict of a reused key.
func (c *fakeChat) repeatLocked(u parley.User, roomID string, seq int64, deletion bool, body, clientID string) (m parley.Message, ok bool, err error) {
	if err := parley.CheckClientID(clientID); err != nil || clientID == "" {
		return m, err != nil, err
	}
	fr, err := c.memberLocked(u, roomID)
	if err != nil {
		return m, true, err
	}
	k, ok := fr.keys[u.ID+"\x00"+clientID]
	if !ok {
		return m, false, nil
	}
	m = fr.msgs[k.Seq-1]
	return m, true, k.Repeat(clientID, seq, deletion, body, &m)
}

// putKeyLocked keeps the key of an applied change.
func putKeyLocked(fr *fakeRoom, u parley.User, clientID string, k parley.ChangeKey) {
	if clientID == "" {
		return
	}
	if fr.keys == nil {
		fr.keys = map[string]parley.ChangeKey{}
	}
	fr.keys[u.ID+"\x00"+clientID] = k
}

func (c *fakeChat) EditMessage(ctx context.Context, u parley.User, roomID string, seq int64, body, clientID string) (parley.Message, error) {
	if body == "" {
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "body must not be empty")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok, err := c.repeatLocked(u, roomID, seq, false, body, clientID); ok {
		return m, err
	}
	fr, m, err := c.messageLocked(u, roomID, seq)
	switch {
	case err != nil:
		return parley.Message{}, err
	case m.SenderID != u.ID:
		return parley.Message{}, parley.Errorf(parley.CodeForbidden, "only its sender may edit a message")
	case m.DeletedAt != nil:
		return parley.Message{}, parley.Errorf(parley.CodeConflict, "the message is deleted")
	}
	at := parley.Now()
	fr.room.LastChange++
	m.Body, m.EditedAt, m.Change = body, &at, fr.room.LastChange
	putKeyLocked(fr, u, clientID, parley.ChangeKey{Seq: seq, Change: m.Change})
	return *m, nil
}

func (c *fakeChat) DeleteMessage(ctx context.Context, u parley.User, roomID string, seq int64, clientID string) (parley.Message, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if m, ok, err := c.repeatLocked(u, roomID, seq, true, "", clientID); ok {
		return m, err
	}
	fr, m, err := c.messageLocked(u, roomID, seq)
	switch {
	case err != nil:
		return parley.Message{}, err
	case m.SenderID != u.ID && fr.members[0] != u.ID:
		return parley.Message{}, parley.Errorf(parley.CodeForbidden, "only its sender or a moderator may delete a message")
	case m.DeletedAt != nil:
		return *m, nil
	}
	at := parley.Now()
	fr.room.LastChange++
	m.Body, m.DeletedAt, m.Change = "", &at, fr.room.LastChange
	putKeyLocked(fr, u, clientID, parley.ChangeKey{Seq: seq, Deleted: true, Change: m.Change})
	return *m, nil
}

func (c *fakeChat) Changed(ctx context.Context, u parley.User, roomID string, after int64, limit int) ([]parley.Message, error) {
	if err := checkLimit(limit); err != nil {
		return nil, err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.memberLocked(u, roomID)
	if err != nil {
		return nil, err
	}
	out := []parley.Message{}
	for ch := after + 1; ch <= fr.room.LastChange && len(out) < limit; ch++ {
		for _, m := range fr.msgs {
			if m.Change == ch {
				out = append(out, m)
			}
		}
	}
	return out, nil
}

// TestChangeRoutes: the routes of edits, deletions, changed_after and
// search, their statuses and bodies.
func TestChangeRoutes(t *testing.T) {
	e := newEnv(t, nil)
	alice, bob, carol := e.mustSignUp("alice"), e.mustSignUp("bob"), e.mustSignUp("carol")
	room := e.mustCreateRoom(alice, "g")
	e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/members", bob, nil), "join", http.StatusCreated, nil)
	for _, body := range []string{"hello world", "bob here", "world peace"} {
		who := alice
		if body == "bob here" {
			who = bob
		}
		e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/messages", who, map[string]string{"body": body}), "send", http.StatusCreated, nil)
	}
	msgs := "/api/rooms/" + room.ID + "/messages"
	for _, tt := range []struct {
		name, method, path, token string
		body                      any
		status                    int
		want                      string // a part of the response body
	}{
		{"edit", "PATCH", msgs + "/1", alice, map[string]string{"body": "hello there"}, 200, `"change":1`},
		{"edit shows edited_at", "GET", msgs + "?limit=1&before=2", alice, nil, 200, `"edited_at":"`},
		{"new message has null edited_at", "GET", msgs + "?limit=1", alice, nil, 200, `"edited_at":null,"deleted_at":null,"change":0`},
		{"edit by another", "PATCH", msgs + "/1", bob, map[string]string{"body": "mine now"}, 403, `"forbidden"`},
		{"edit by a non-member", "PATCH", msgs + "/1", carol, map[string]string{"body": "x"}, 403, `"forbidden"`},
		{"edit of an unknown seq", "PATCH", msgs + "/9", alice, map[string]string{"body": "x"}, 404, `"not_found"`},
		{"edit with a bad seq", "PATCH", msgs + "/zero", alice, map[string]string{"body": "x"}, 400, `"invalid"`},
		{"edit without body", "PATCH", msgs + "/1", alice, map[string]string{}, 400, `"invalid"`},
		{"edit with empty body", "PATCH", msgs + "/1", alice, map[string]string{"body": ""}, 400, `"invalid"`},
		{"delete by another member", "DELETE", msgs + "/1", bob, nil, 403, `"forbidden"`},
		{"delete by the sender", "DELETE", msgs + "/2", bob, nil, 204, ""},
		{"delete again", "DELETE", msgs + "/2", bob, nil, 204, ""},
		{"delete by the owner", "DELETE", msgs + "/3", alice, nil, 204, ""},
		{"edit a tombstone", "PATCH", msgs + "/2", bob, map[string]string{"body": "back"}, 409, `"conflict"`},
		{"tombstone keeps its seq", "GET", msgs + "?after=1&limit=1", alice, nil, 200, `"seq":2,"sender_id"`},
		{"tombstone has no text", "GET", msgs + "?after=1&limit=1", alice, nil, 200, `"body":""`},
		{"room shows last_change", "GET", "/api/rooms/" + room.ID, alice, nil, 200, `"last_change":3`},
		{"changed_after", "GET", msgs + "?changed_after=1", alice, nil, 200, `"seq":2`},
		{"changed_after bad", "GET", msgs + "?changed_after=-1", alice, nil, 400, `"invalid"`},
		{"changed_after with q", "GET", msgs + "?changed_after=0&q=x", alice, nil, 400, `"invalid"`},
		{"changed_after by a non-member", "GET", msgs + "?changed_after=0", carol, nil, 403, `"forbidden"`},
		{"search a room", "GET", msgs + "?q=hello", alice, nil, 200, `"body":"hello there"`},
		{"search a room: deleted never match", "GET", msgs + "?q=peace", alice, nil, 200, `{"messages":[]}`},
		{"search with no words", "GET", msgs + "?q=%22*()", alice, nil, 400, `"invalid"`},
		{"search with too many words", "GET", msgs + "?q=a+b+c+d+e+f+g+h+i", alice, nil, 400, `"invalid"`},
		{"search with after", "GET", msgs + "?q=hello&after=1", alice, nil, 400, `"invalid"`},
		{"search by a non-member", "GET", msgs + "?q=hello", carol, nil, 403, `"forbidden"`},
		{"search everywhere", "GET", "/api/me/search?q=HELLO", bob, nil, 200, `{"hits":[{"room":{"id":"` + room.ID},
		{"search everywhere: next_cursor", "GET", "/api/me/search?q=hello", bob, nil, 200, `"next_cursor":null}`},
		{"search everywhere: nothing", "GET", "/api/me/search?q=hello", carol, nil, 200, `{"hits":[],"next_cursor":null}`},
		{"search everywhere: no q", "GET", "/api/me/search", bob, nil, 400, `"invalid"`},
		{"search everywhere: bad limit", "GET", "/api/me/search?q=x&limit=0", bob, nil, 400, `"invalid"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := e.do(tt.method, tt.path, tt.token, tt.body)
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.want) {
				t.Errorf("%s %s = %d %s, want %d with %s", tt.method, tt.path, rec.Code, rec.Body, tt.status, tt.want)
			}
		})
	}
}

// TestChangeRoutesClientID: PATCH and DELETE of a message carry the
// change's idempotency key as client_id in the JSON body, as a send does:
// a repeat is answered as the first time (200 with the message at the same
// change, 204) and takes no change number; the key reused for another
// change is 409 conflict; a malformed key is 400.
func TestChangeRoutesClientID(t *testing.T) {
	e := newEnv(t, nil)
	alice := e.mustSignUp("alice")
	room := e.mustCreateRoom(alice, "g")
	for _, body := range []string{"one", "two", "three"} {
		e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/messages", alice, map[string]string{"body": body}), "send", http.StatusCreated, nil)
	}
	msgs := "/api/rooms/" + room.ID + "/messages"
	edit := func(body, key string) map[string]string { return map[string]string{"body": body, "client_id": key} }
	for _, tt := range []struct {
		name, method, path string
		body               any
		status             int
		want               string // a part of the response body
	}{
		{"keyed edit", "PATCH", msgs + "/1", edit("one, edited", "e1"), 200, `"body":"one, edited","client_id":"","sent_at"`},
		{"keyed edit takes change 1", "GET", "/api/rooms/" + room.ID, nil, 200, `"last_change":1`},
		{"repeated edit", "PATCH", msgs + "/1", edit("one, edited", "e1"), 200, `"change":1}`},
		{"repeated edit takes no change", "GET", "/api/rooms/" + room.ID, nil, 200, `"last_change":1`},
		{"key reused with another body", "PATCH", msgs + "/1", edit("one, again", "e1"), 409, `"conflict"`},
		{"key reused for another seq", "PATCH", msgs + "/2", edit("one, edited", "e1"), 409, `"conflict"`},
		{"edit key reused for a deletion", "DELETE", msgs + "/1", map[string]string{"client_id": "e1"}, 409, `"conflict"`},
		{"keyed deletion", "DELETE", msgs + "/2", map[string]string{"client_id": "d1"}, 204, ""},
		{"repeated deletion", "DELETE", msgs + "/2", map[string]string{"client_id": "d1"}, 204, ""},
		{"deletion key reused for another seq", "DELETE", msgs + "/3", map[string]string{"client_id": "d1"}, 409, `"conflict"`},
		{"deletion key reused for an edit", "PATCH", msgs + "/2", edit("back", "d1"), 409, `"conflict"`},
		{"malformed key", "PATCH", msgs + "/3", edit("three", "bad\nkey"), 400, `"invalid"`},
		{"key over 64 bytes", "DELETE", msgs + "/3", map[string]string{"client_id": strings.Repeat("k", 65)}, 400, `"invalid"`},
		{"unknown field in a deletion's body", "DELETE", msgs + "/3", map[string]string{"clientid": "x"}, 400, `"invalid"`},
		{"refusals and repeats took no change", "GET", "/api/rooms/" + room.ID, nil, 200, `"last_change":2`},
		{"message 3 untouched", "GET", msgs + "?limit=1", nil, 200, `"body":"three","client_id":"","sent_at"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rec := e.do(tt.method, tt.path, alice, tt.body)
			if rec.Code != tt.status || !strings.Contains(rec.Body.String(), tt.want) {
				t.Errorf("%s %s = %d %s, want %d with %s", tt.method, tt.path, rec.Code, rec.Body, tt.status, tt.want)
			}
		})
	}
	// A DELETE with no body at all has no key.
	req := httptest.NewRequest("DELETE", msgs+"/3", nil)
	req.Header.Set("Authorization", "Bearer "+alice)
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	if rec.Code != http.StatusNoContent {
		t.Errorf("DELETE without a body = %d %s, want 204", rec.Code, rec.Body)
	}
}
