package rest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"parley"
	"parley/cache"
	"parley/chat"
	"parley/ratelimit"
	"parley/rest"
	"parley/sqlite"
)

// openAccountStack is rest over chat over the cache over SQLite, with
// account deletion wired as cmd/parley does.
func openAccountStack(t *testing.T) (*chat.Service, *rest.Handler) {
	t.Helper()
	return openAccountStackWith(t, rest.Config{})
}

// openAccountStackWith is openAccountStack with cfg's limits.
func openAccountStackWith(t *testing.T, cfg rest.Config) (*chat.Service, *rest.Handler) {
	t.Helper()
	var c *cache.Store
	db, err := sqlite.Open(context.Background(), sqlite.Config{
		Path: filepath.Join(t.TempDir(), "parley.db"), Sync: sqlite.SyncOff,
		OnCommit: func(events []parley.Event) { c.Apply(events) },
	})
	if err != nil {
		t.Fatal(err)
	}
	c = cache.New(db, cache.Config{})
	t.Cleanup(func() { c.Close() })
	svc := chat.New(chat.Config{Store: c, Accounts: db, KDF: chat.KDF{Time: 1, Memory: 64, Threads: 1}, Now: cfg.Now})
	cfg.Chat = svc
	return svc, rest.New(cfg)
}

// TestDeleteMeGuessesWait: DELETE /api/me checks a password, so its wrong
// passwords count as failed logins of the name (and the address): a
// stolen token cannot be used to guess its owner's password faster than
// POST /api/tokens allows, and once the name waits, the password is not
// checked and the account stays.
func TestDeleteMeGuessesWait(t *testing.T) {
	c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	svc, h := openAccountStackWith(t, rest.Config{
		LoginByAddress: ratelimit.NewBackoff(ratelimit.BackoffConfig{Free: 6, Base: time.Second, Max: 15 * time.Minute, Now: c.Now}),
		LoginByName:    ratelimit.NewBackoff(ratelimit.BackoffConfig{Free: 3, Base: time.Second, Max: 15 * time.Minute, Now: c.Now}),
		Now:            c.Now,
	})
	_, tok := signUp(t, svc, "ann")
	for i := range 3 {
		if w := serveAccount(h, "DELETE", "/api/me", tok, `{"password":"guess"}`); w.Code != http.StatusForbidden {
			t.Fatalf("guess %d: DELETE /api/me = %d %s, want 403", i+1, w.Code, w.Body)
		}
	}
	w := serveAccount(h, "DELETE", "/api/me", tok, `{"password":"password-of-ann"}`)
	if w.Code != http.StatusTooManyRequests || w.Header().Get("Retry-After") == "" {
		t.Fatalf("after 3 wrong passwords: DELETE /api/me = %d %s, want 429 with Retry-After, the password unchecked", w.Code, w.Body)
	}
	if w := serveAccount(h, "GET", "/api/me", tok, ""); w.Code != http.StatusOK {
		t.Fatalf("GET /api/me = %d, want 200: the refused deletion changed nothing", w.Code)
	}
	c.Advance(time.Second)
	if w := serveAccount(h, "DELETE", "/api/me", tok, `{"password":"password-of-ann"}`); w.Code != http.StatusNoContent {
		t.Fatalf("after the wait: DELETE /api/me = %d %s, want 204", w.Code, w.Body)
	}
}

func serveAccount(h *rest.Handler, method, path, tok, body string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	if tok != "" {
		req.Header.Set("Authorization", "Bearer "+tok)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// exportLine is one line of GET /api/me/export.
type exportLine struct {
	Type       string            `json:"type"`
	User       *parley.User      `json:"user"`
	Room       *parley.Room      `json:"room"`
	Membership *exportMembership `json:"membership"`
	Message    *parley.Message   `json:"message"`
}

// exportMembership is a room line's membership.
type exportMembership struct {
	parley.Member
	Notifications string `json:"notifications"`
}

// TestExportMe: GET /api/me/export is a JSON Lines download of the
// caller's account (no secret), rooms with the membership, and every
// message the caller sent, edited and deleted ones as they are now, and
// nobody else's.
func TestExportMe(t *testing.T) {
	ctx := context.Background()
	svc, h := openAccountStack(t)
	ann, tokA := signUp(t, svc, "ann")
	bob, _ := signUp(t, svc, "bob")
	room, _, err := svc.CreateRoom(ctx, ann, chat.NewRoom{Kind: parley.KindGroup, Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	must(t)(svc.Join(ctx, bob, room.ID))
	m1, _, _ := svc.Send(ctx, ann, room.ID, "first, @bob", "c-1")
	must(t)(svc.SetNotifyLevel(ctx, ann, room.ID, parley.NotifyMentions))
	must(t)(svc.Send(ctx, bob, room.ID, "bob's", ""))
	m3, _, _ := svc.Send(ctx, ann, room.ID, "to edit", "")
	m4, _, _ := svc.Send(ctx, ann, room.ID, "to delete", "")
	must(t)(svc.EditMessage(ctx, ann, room.ID, m3.Seq, "edited", ""))
	must(t)(svc.DeleteMessage(ctx, ann, room.ID, m4.Seq, ""))

	w := serveAccount(h, "GET", "/api/me/export", tokA, "")
	if w.Code != http.StatusOK || !strings.HasPrefix(w.Header().Get("Content-Disposition"), "attachment") ||
		w.Header().Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("GET /api/me/export = %d %q %q, want 200, an attachment of application/x-ndjson", w.Code,
			w.Header().Get("Content-Type"), w.Header().Get("Content-Disposition"))
	}
	if bytes.Contains(w.Body.Bytes(), []byte("password")) {
		t.Errorf("the export says password: %s", w.Body)
	}
	body := w.Body.String()
	var lines []exportLine
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		var l exportLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	if len(lines) != 6 || lines[0].Type != "account" || lines[0].User.ID != ann.ID || lines[0].User.Name != "ann" || lines[5].Type != "end" {
		t.Fatalf("export = %s, want the account, the room, ann's 3 messages and the end", body)
	}
	if l := lines[1]; l.Type != "room" || l.Room.ID != room.ID || l.Membership.Role != parley.RoleOwner || l.Membership.ReadSeq != m4.Seq ||
		l.Membership.Notifications != parley.NotifyMentions {
		t.Errorf("line 2 = %+v, want the room with ann the owner, read up to %d, at level mentions", l, m4.Seq)
	}
	if m := lines[2].Message; m == nil || m.Mentions != parley.MentionList(bob.ID) {
		t.Errorf("message line 0 = %+v, want it to mention bob", m)
	}
	for i, want := range []struct {
		seq      int64
		body     string
		clientID string
		edited   bool
		deleted  bool
	}{{m1.Seq, "first, @bob", "c-1", false, false}, {m3.Seq, "edited", "", true, false}, {m4.Seq, "", "", false, true}} {
		m := lines[2+i].Message
		if lines[2+i].Type != "message" || m.Seq != want.seq || m.Body != want.body || m.ClientID != want.clientID ||
			(m.EditedAt != nil) != want.edited || (m.DeletedAt != nil) != want.deleted || m.ID == "" || m.SentAt.IsZero() {
			t.Errorf("message line %d = %+v, want %+v", i, m, want)
		}
	}
	if w := serveAccount(h, "GET", "/api/me/export", "", ""); w.Code != http.StatusUnauthorized {
		t.Errorf("GET /api/me/export without a token = %d, want 401", w.Code)
	}
}

// TestDeleteMe: DELETE /api/me with a wrong password or none is refused
// with a JSON error and changes nothing; with the right one it is 204, the
// token stops working, the name can sign up no more (held), the room
// passes to the other member and the caller's messages are tombstones.
func TestDeleteMe(t *testing.T) {
	ctx := context.Background()
	svc, h := openAccountStack(t)
	ann, tokA := signUp(t, svc, "ann")
	bob, tokB := signUp(t, svc, "bob")
	room, _, err := svc.CreateRoom(ctx, ann, chat.NewRoom{Kind: parley.KindGroup, Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	must(t)(svc.Join(ctx, bob, room.ID))
	must(t)(svc.Send(ctx, ann, room.ID, "ann's words", ""))
	must(t)(svc.Send(ctx, bob, room.ID, "bob's words", ""))

	for _, tc := range []struct {
		name, body string
		status     int
		code       string
	}{
		{"wrong password", `{"password":"password-of-bob"}`, http.StatusForbidden, parley.CodeForbidden},
		{"no password", `{}`, http.StatusForbidden, parley.CodeForbidden},
		{"not JSON", `password`, http.StatusBadRequest, parley.CodeInvalid},
	} {
		w := serveAccount(h, "DELETE", "/api/me", tokA, tc.body)
		var e struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != tc.status || e.Error.Code != tc.code || e.Error.Message == "" {
			t.Errorf("%s: DELETE /api/me = %d %s, want %d %s", tc.name, w.Code, w.Body, tc.status, tc.code)
		}
		if w := serveAccount(h, "GET", "/api/me", tokA, ""); w.Code != http.StatusOK {
			t.Fatalf("%s: then GET /api/me = %d, want 200: nothing changes", tc.name, w.Code)
		}
	}

	if w := serveAccount(h, "DELETE", "/api/me", tokA, `{"password":"password-of-ann"}`); w.Code != http.StatusNoContent {
		t.Fatalf("DELETE /api/me = %d %s, want 204", w.Code, w.Body)
	}
	if w := serveAccount(h, "GET", "/api/me", tokA, ""); w.Code != http.StatusUnauthorized {
		t.Errorf("GET /api/me with the deleted account's token = %d, want 401", w.Code)
	}
	if w := serveAccount(h, "POST", "/api/users", "", `{"name":"ann","password":"another password"}`); w.Code != http.StatusConflict {
		t.Errorf("POST /api/users ann = %d %s, want 409 while the name is held", w.Code, w.Body)
	}
	w := serveAccount(h, "GET", "/api/rooms/"+room.ID+"/members", tokB, "")
	if w.Code != http.StatusOK || strings.Contains(w.Body.String(), ann.ID) || !strings.Contains(w.Body.String(), `"role":"owner"`) {
		t.Errorf("GET members = %d %s, want bob alone, the owner", w.Code, w.Body)
	}
	var page struct{ Messages []parley.Message }
	w = serveAccount(h, "GET", "/api/rooms/"+room.ID+"/messages", tokB, "")
	json.Unmarshal(w.Body.Bytes(), &page)
	for _, m := range page.Messages {
		if (m.SenderID == ann.ID) != m.Deleted() || m.SenderID == ann.ID && m.Body != "" {
			t.Errorf("message %d by %s = %q, deleted %v; want ann's a tombstone, bob's kept", m.Seq, m.SenderName, m.Body, m.Deleted())
		}
	}
	if len(page.Messages) != 2 {
		t.Errorf("GET messages = %s, want 2", w.Body)
	}
}

// TestDeleteMeSignedInRecently: an account of an outside identity has
// no password; DELETE /api/me takes, in its place, a token of a sign-in
// made within chat.DefaultSignInWindow (here an OpenID Connect sign-in,
// LoginExternal), and answers an older one 403 "sign in again", changing
// nothing. A password account keeps the password rule.
func TestDeleteMeSignedInRecently(t *testing.T) {
	ctx := context.Background()
	c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	svc, h := openAccountStackWith(t, rest.Config{Now: c.Now})
	_, tokAnn := signUp(t, svc, "ann")
	tokXena, xena, err := svc.LoginExternal(ctx, "https://id.example", "sub-xena", "xena", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(chat.DefaultSignInWindow + time.Minute)
	for _, tc := range []struct {
		name, tok, body, msg string
	}{
		{"an old sign-in", tokXena, `{}`, "sign in again to delete this account"},
		{"an old sign-in with a password", tokXena, `{"password":"anything"}`, "sign in again to delete this account"},
		{"a password account without its password", tokAnn, `{}`, "wrong password"},
	} {
		w := serveAccount(h, "DELETE", "/api/me", tc.tok, tc.body)
		var e struct {
			Error struct{ Code, Message string }
		}
		json.Unmarshal(w.Body.Bytes(), &e)
		if w.Code != http.StatusForbidden || e.Error.Code != parley.CodeForbidden || !strings.Contains(e.Error.Message, tc.msg) {
			t.Errorf("%s: DELETE /api/me = %d %s, want 403 %q", tc.name, w.Code, w.Body, tc.msg)
		}
		if w := serveAccount(h, "GET", "/api/me", tc.tok, ""); w.Code != http.StatusOK {
			t.Fatalf("%s: then GET /api/me = %d, want 200: nothing changes", tc.name, w.Code)
		}
	}
	// Signed in again: the new token deletes the account, with no password.
	tok2, _, err := svc.LoginExternal(ctx, "https://id.example", "sub-xena", "xena", nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Advance(time.Minute)
	// The old token, stolen say, stays old after the fresh sign-in: the
	// sign-in that counts is the one behind the request's own token.
	if w := serveAccount(h, "DELETE", "/api/me", tokXena, `{}`); w.Code != http.StatusForbidden {
		t.Fatalf("DELETE /api/me with the old token after a fresh sign-in = %d %s, want 403", w.Code, w.Body)
	}
	if w := serveAccount(h, "DELETE", "/api/me", tok2, `{}`); w.Code != http.StatusNoContent {
		t.Fatalf("DELETE /api/me just after a sign-in = %d %s, want 204", w.Code, w.Body)
	}
	for _, tok := range []string{tokXena, tok2} {
		if w := serveAccount(h, "GET", "/api/me", tok, ""); w.Code != http.StatusUnauthorized {
			t.Errorf("GET /api/me with a token of %s after the deletion = %d, want 401", xena.Name, w.Code)
		}
	}
	if _, _, err := svc.LoginExternal(ctx, "https://id.example", "sub-xena", "xena", nil); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("signing in again after the deletion: %v, want unauthorized", err)
	}
}

// deadlineRecorder is a ResponseRecorder that notes the write deadlines
// http.ResponseController sets on it.
type deadlineRecorder struct {
	*httptest.ResponseRecorder
	deadlines []time.Time
}

func (d *deadlineRecorder) SetWriteDeadline(t time.Time) error {
	d.deadlines = append(d.deadlines, t)
	return nil
}

// TestExportMeMovesTheWriteDeadline: a long download moves its write
// deadline on as it goes (a page of lines at a time), into the future,
// so that the server's write timeout cuts only a stalled one.
func TestExportMeMovesTheWriteDeadline(t *testing.T) {
	ctx := context.Background()
	svc, h := openAccountStack(t)
	ann, tok := signUp(t, svc, "ann")
	room, _, err := svc.CreateRoom(ctx, ann, chat.NewRoom{Kind: parley.KindGroup, Title: "t"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 250 {
		must(t)(svc.Send(ctx, ann, room.ID, fmt.Sprint("m", i), ""))
	}
	req := httptest.NewRequest("GET", "/api/me/export", nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	w := &deadlineRecorder{ResponseRecorder: httptest.NewRecorder()}
	start := time.Now()
	h.ServeHTTP(w, req)
	if w.Code != http.StatusOK || strings.Count(w.Body.String(), "\n") != 253 {
		t.Fatalf("GET /api/me/export = %d, %d lines; want 200, 253", w.Code, strings.Count(w.Body.String(), "\n"))
	}
	if len(w.deadlines) < 3 {
		t.Errorf("the export of 253 lines set %d write deadlines, want one every 100 lines", len(w.deadlines))
	}
	for _, d := range w.deadlines {
		if !d.After(start.Add(time.Second)) {
			t.Errorf("write deadline %v: want it well after the start, %v", d, start)
		}
	}
}
