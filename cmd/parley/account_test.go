package main

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"parley"
	"parley/chat"
	"parley/stomp"
)

// deletionSetUp signs up alice and bob on a and b, puts them in alice's
// group room and has each send on their node: alice twice, bob once.
func deletionSetUp(t *testing.T, a, b *Main) (alice, bob *client, aliceU user, r room) {
	t.Helper()
	alice, aliceU = mustSignUp(t, a.Addr(), "a"+parleyID())
	bob, _ = mustSignUp(t, b.Addr(), "b"+parleyID())
	if st := alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "t"}, &r); st != http.StatusCreated {
		t.Fatalf("create room = %d", st)
	}
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join = %d", st)
	}
	for _, s := range []struct {
		c    *client
		body string
	}{{alice, "alice one"}, {bob, "bob one"}, {alice, "alice two"}} {
		if st := s.c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": s.body}, nil); st != http.StatusCreated {
			t.Fatalf("send %q = %d", s.body, st)
		}
	}
	return alice, bob, aliceU, r
}

// expectLeft reads sc's frames (the room's events) until the member event
// of user leaving, past the deleted events before it and the set-up's own
// joined event (in a cluster it may reach this node after the
// subscription).
func expectLeft(t *testing.T, sc *stompClient, userID string) {
	t.Helper()
	for range 20 {
		f := sc.read()
		if f.Command != stomp.Message {
			t.Fatalf("got %v, want the member event left", f)
		}
		if string(f.Get("event")) == "member" && string(f.Get("user")) == userID {
			a := string(f.Get("action"))
			if a == "joined" { // the set-up's, late from another node
				continue
			}
			if a != "left" {
				t.Fatalf("member event of %s: action %q, want left", userID, a)
			}
			return
		}
	}
	t.Fatal("no member event left in 20 events")
}

// expectEnded reads sc's frames until its ERROR unauthorized, past the
// MESSAGE frames of the set-up's sends still on their way (the relay
// delivers them to node B after the session subscribed).
func expectEnded(t *testing.T, sc *stompClient) {
	t.Helper()
	for {
		f := sc.read()
		if f.Command == stomp.Message {
			continue
		}
		if f.Command.String() != "ERROR" || string(f.Get("code")) != "unauthorized" {
			t.Fatalf("got %v, want ERROR code:unauthorized", f)
		}
		return
	}
}

// checkDeleted checks, as bob on his node, that alice's messages are
// tombstones and bob's is kept, and that alice's name neither logs in nor
// signs up.
func checkDeleted(t *testing.T, bob *client, alice user, r room, keep bool) {
	t.Helper()
	var page struct{ Messages []parley.Message }
	if st := bob.do("GET", "/api/rooms/"+r.ID+"/messages", nil, &page); st != http.StatusOK || len(page.Messages) != 3 {
		t.Fatalf("GET messages as bob = %d, %d messages; want 200, 3", st, len(page.Messages))
	}
	for _, m := range page.Messages {
		alices := m.SenderID == alice.ID
		erased := alices && !keep
		if erased != m.Deleted() || erased != (m.Body == "") {
			t.Errorf("keep %v: message %d by %s: %q, deleted %v; want alice's erased unless kept, bob's kept", keep, m.Seq, m.SenderName, m.Body, m.Deleted())
		}
		if alices != (m.SenderName == chat.DeletedSenderName) {
			t.Errorf("message %d by %s: sender name %q", m.Seq, m.SenderID, m.SenderName)
		}
	}
	anon := &client{t: t, base: bob.base}
	creds := map[string]string{"name": alice.Name, "password": "correct horse"}
	if st := anon.do("POST", "/api/tokens", creds, nil); st != http.StatusUnauthorized {
		t.Errorf("log in as the deleted %s = %d, want 401", alice.Name, st)
	}
	if st := anon.do("POST", "/api/users", creds, nil); st != http.StatusConflict {
		t.Errorf("sign up as the deleted %s = %d, want 409 while the name is held", alice.Name, st)
	}
}

// TestDeleteAccount: through the real node, GET /api/me/export is a JSON
// Lines download of the caller's messages; DELETE /api/me with a wrong
// password is 403 and changes nothing; with the right one it ends the
// user's STOMP session with ERROR unauthorized, the other member hears
// the member event left, the messages are tombstones and the name is
// held.
func TestDeleteAccount(t *testing.T) {
	m := MustOpenMain(t)
	alice, bob, aliceU, r := deletionSetUp(t, m, m)
	sa := openSession(t, m, "websocket", alice.token)
	ev := subscribeEvents(t, m, bob.token, r.ID, false)
	st, up, _ := alice.upload(r.ID, "notes.txt", "text/plain", []byte("alice's notes"))
	if st != http.StatusCreated {
		t.Fatalf("upload = %d", st)
	}

	req, _ := http.NewRequest("GET", alice.base+"/api/me/export", nil)
	req.Header.Set("Authorization", "Bearer "+alice.token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var bodies []string
	var fileLines []struct {
		ID, Name, RoomID, SHA256, Download string
		Size                               int64
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l struct {
			Type    string
			Message *parley.Message
			File    *struct {
				ID, Name, SHA256, Download string
				RoomID                     string `json:"room_id"`
				Size                       int64
			}
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		switch l.Type {
		case "message":
			bodies = append(bodies, l.Message.Body)
		case "file":
			f := l.File
			fileLines = append(fileLines, struct {
				ID, Name, RoomID, SHA256, Download string
				Size                               int64
			}{f.ID, f.Name, f.RoomID, f.SHA256, f.Download, f.Size})
		}
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") ||
		strings.Join(bodies, "|") != "alice one|alice two" {
		t.Errorf("GET /api/me/export = %d %q, messages %q; want an attachment with alice's two", resp.StatusCode,
			resp.Header.Get("Content-Disposition"), bodies)
	}
	sum := sha256.Sum256([]byte("alice's notes"))
	if len(fileLines) != 1 || fileLines[0].ID != up.ID || fileLines[0].Name != "notes.txt" || fileLines[0].RoomID != r.ID ||
		fileLines[0].Size != 13 || fileLines[0].SHA256 != hex.EncodeToString(sum[:]) || fileLines[0].Download != "/api/files/"+up.ID {
		t.Errorf("export file lines = %+v, want alice's upload %s with its download path", fileLines, up.ID)
	} else if resp, body := alice.fetch(fileLines[0].Download); resp.StatusCode != http.StatusOK || string(body) != "alice's notes" {
		t.Errorf("GET the export's download path = %d %q", resp.StatusCode, body)
	}

	if st := alice.do("DELETE", "/api/me", map[string]string{"password": "wrong horse"}, nil); st != http.StatusForbidden {
		t.Fatalf("DELETE /api/me with a wrong password = %d, want 403", st)
	}
	stillOpen(t, sa, "alice's session after a wrong password")
	if st := alice.do("DELETE", "/api/me", map[string]string{"password": "correct horse"}, nil); st != http.StatusNoContent {
		t.Fatalf("DELETE /api/me = %d, want 204", st)
	}
	expectEnded(t, sa)
	expectLeft(t, ev, aliceU.ID)
	if st := alice.do("GET", "/api/me", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("GET /api/me with the deleted account's token = %d, want 401", st)
	}
	checkDeleted(t, bob, aliceU, r, false)
}

// TestClusterDeleteAccountKeep: with --deleted-account-messages=keep, an
// account deleted on node A leaves its messages' text, shown under
// chat.DeletedSenderName on node B (its hot reads hear the renames), and
// B's member following the room's changes hears each rename.
func TestClusterDeleteAccountKeep(t *testing.T) {
	env := needCluster(t)
	keep := func(c *Config) { c.KeepDeletedMessages = true }
	a, b := startNode(t, env, "a", keep), startNode(t, env, "b", keep)
	alice, bob, aliceU, r := deletionSetUp(t, a, b)
	checkDeletedBefore(t, bob, r) // B's hot reads hold the history
	ev := subscribeEvents(t, b, bob.token, r.ID, false)
	if st := alice.do("DELETE", "/api/me", map[string]string{"password": "correct horse"}, nil); st != http.StatusNoContent {
		t.Fatalf("DELETE /api/me on A = %d, want 204", st)
	}
	// The renames come before alice leaves (the member events of the
	// set-up may come first).
	edited := 0
	for edited < 2 {
		f := ev.read()
		switch string(f.Get("event")) {
		case "edited":
			var m parley.Message
			if err := json.Unmarshal(f.Body, &m); err != nil || m.SenderName != chat.DeletedSenderName || m.Body == "" {
				t.Errorf("edited event on B = %s, want alice's message with its text under %q", f.Body, chat.DeletedSenderName)
			}
			edited++
		case "member":
			if string(f.Get("user")) == aliceU.ID {
				t.Fatalf("alice left before her messages were renamed (%d of 2)", edited)
			}
		case "read":
			// The set-up's own sends moved read positions; their
			// events may reach node B after the subscription.
		default:
			t.Fatalf("got %v, want edited events", f)
		}
	}
	checkDeleted(t, bob, aliceU, r, true)
}

// checkDeletedBefore reads r's history as c, so that c's node caches it.
func checkDeletedBefore(t *testing.T, c *client, r room) {
	t.Helper()
	if st := c.do("GET", "/api/rooms/"+r.ID+"/messages", nil, nil); st != http.StatusOK {
		t.Fatalf("GET messages = %d", st)
	}
}

// TestDeletedNameHold: --deleted-name-hold sets how long the name is held;
// once it is over, the name signs up again, a new account.
func TestDeletedNameHold(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.DeletedNameHold = time.Nanosecond })
	alice, aliceU := mustSignUp(t, m.Addr(), "a"+parleyID())
	if st := alice.do("DELETE", "/api/me", map[string]string{"password": "correct horse"}, nil); st != http.StatusNoContent {
		t.Fatalf("DELETE /api/me = %d, want 204", st)
	}
	again, u := mustSignUp(t, m.Addr(), aliceU.Name)
	if u.ID == aliceU.ID || again.token == "" {
		t.Errorf("sign up as %s after the hold = %+v, want a new account", aliceU.Name, u)
	}
}

// TestClusterDeleteAccount: an account deleted on node A ends its STOMP
// session on node B with ERROR unauthorized (the revocation goes through
// Redis), a member on B hears the member event left, and B refuses the
// name.
func TestClusterDeleteAccount(t *testing.T) {
	env := needCluster(t)
	a, b := startNode(t, env, "a"), startNode(t, env, "b")
	alice, bob, aliceU, r := deletionSetUp(t, a, b)
	sa := openSession(t, b, "websocket", alice.token)
	ev := subscribeEvents(t, b, bob.token, r.ID, false)
	if st := alice.do("DELETE", "/api/me", map[string]string{"password": "correct horse"}, nil); st != http.StatusNoContent {
		t.Fatalf("DELETE /api/me on A = %d, want 204", st)
	}
	if st := on(alice, b).do("GET", "/api/me", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("GET /api/me on B right after the deletion on A = %d, want 401", st)
	}
	expectEnded(t, sa)
	expectLeft(t, ev, aliceU.ID)
	checkDeleted(t, bob, aliceU, r, false)
}
