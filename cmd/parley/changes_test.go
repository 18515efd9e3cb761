package main

import (
	"fmt"
	"net/http"
	"net/url"
	"testing"
	"time"
)

// changedMessage is a message with the fields of changes.
type changedMessage struct {
	message
	EditedAt  *string `json:"edited_at"`
	DeletedAt *string `json:"deleted_at"`
	Change    int64   `json:"change"`
}

type changedPage struct {
	Messages []changedMessage `json:"messages"`
}

type roomList struct {
	Rooms []struct {
		Room struct {
			room
			LastChange int64 `json:"last_change"`
		} `json:"room"`
		LastMessage *changedMessage `json:"last_message"`
	} `json:"rooms"`
}

// noSendLimit lifts the REST send limit: the tests send fast.
func noSendLimit(c *Config) { c.RestSendRate = 0 }

// bodyAt returns the body of seq in page, and whether it is there.
func bodyAt(p changedPage, seq int64) (string, bool) {
	for _, m := range p.Messages {
		if m.Seq == seq {
			return m.Body, true
		}
	}
	return "", false
}

// TestAPIChanges edits, deletes and searches through the real server on
// SQLite, with every cache of the default configuration in the way: the
// newest page and the room list (memory) and an older page (the history
// cache's block) show each change at once.
func TestAPIChanges(t *testing.T) {
	m := MustOpenMain(t, noSendLimit)
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	bob, _ := mustSignUp(t, m.Addr(), "bob")
	var g room
	if st := alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "g"}, &g); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := bob.do("POST", "/api/rooms/"+g.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: %d", st)
	}
	msgs := "/api/rooms/" + g.ID + "/messages"
	for i := 1; i <= 150; i++ {
		if st := alice.do("POST", msgs, map[string]string{"body": fmt.Sprintf("note %d about apples", i)}, nil); st != http.StatusCreated {
			t.Fatalf("send %d: %d", i, st)
		}
	}
	older := msgs + "?before=21&limit=20" // seqs 1..20: a block of the history cache
	var p changedPage
	for range 2 { // load the block, then read it from memory
		if st := bob.do("GET", older, nil, &p); st != 200 || len(p.Messages) != 20 {
			t.Fatalf("older page: %d, %d messages", st, len(p.Messages))
		}
	}
	bob.do("GET", msgs+"?limit=10", nil, &p)
	var list roomList
	bob.do("GET", "/api/me/rooms", nil, &list)

	var e changedMessage
	if st := alice.do("PATCH", msgs+"/10", map[string]string{"body": "ten, with pears"}, &e); st != 200 || e.Change != 1 || e.EditedAt == nil {
		t.Fatalf("edit 10 = %d %+v", st, e)
	}
	if st := alice.do("PATCH", msgs+"/150", map[string]string{"body": "the last, with pears"}, &e); st != 200 || e.Change != 2 {
		t.Fatalf("edit 150 = %d %+v", st, e)
	}
	if st := bob.do("PATCH", msgs+"/150", map[string]string{"body": "bob was here"}, nil); st != http.StatusForbidden {
		t.Errorf("bob edits alice's message: %d, want 403", st)
	}
	if st := bob.do("DELETE", msgs+"/149", nil, nil); st != http.StatusForbidden {
		t.Errorf("bob deletes alice's message: %d, want 403", st)
	}
	if st := alice.do("DELETE", msgs+"/5", nil, nil); st != http.StatusNoContent {
		t.Errorf("delete 5: %d, want 204", st)
	}

	bob.do("GET", older, nil, &p)
	if b, _ := bodyAt(p, 10); b != "ten, with pears" {
		t.Errorf("older page seq 10 = %q, want the edit", b)
	}
	if b, ok := bodyAt(p, 5); !ok || b != "" {
		t.Errorf("older page seq 5 = %q (there: %v), want a tombstone", b, ok)
	}
	bob.do("GET", msgs+"?limit=10", nil, &p)
	if b, _ := bodyAt(p, 150); b != "the last, with pears" {
		t.Errorf("newest page seq 150 = %q, want the edit", b)
	}
	bob.do("GET", "/api/me/rooms", nil, &list)
	if len(list.Rooms) != 1 || list.Rooms[0].LastMessage == nil || list.Rooms[0].LastMessage.Body != "the last, with pears" ||
		list.Rooms[0].Room.LastChange != 3 {
		t.Errorf("room list = %+v, want the edited last message and last_change 3", list)
	}
	var changed changedPage
	if st := bob.do("GET", msgs+"?changed_after=1", nil, &changed); st != 200 || len(changed.Messages) != 2 ||
		changed.Messages[0].Seq != 150 || changed.Messages[1].Seq != 5 {
		t.Errorf("changed_after=1 = %d %+v, want seqs 150 and 5", st, changed)
	}
	var found changedPage
	if st := bob.do("GET", msgs+"?q="+url.QueryEscape("PEARS"), nil, &found); st != 200 || len(found.Messages) != 2 ||
		found.Messages[0].Seq != 150 || found.Messages[1].Seq != 10 {
		t.Errorf("search pears = %d %+v, want seqs 150 and 10", st, found)
	}
	if st := bob.do("GET", msgs+"?q=note+5+apples", nil, &found); st != 200 || len(found.Messages) != 0 {
		t.Errorf("search for the deleted message = %d %+v, want nothing", st, found)
	}
	var hits struct {
		Hits []struct {
			Room    room           `json:"room"`
			Message changedMessage `json:"message"`
		} `json:"hits"`
		NextCursor *string `json:"next_cursor"`
	}
	if st := bob.do("GET", "/api/me/search?q=apples&limit=100", nil, &hits); st != 200 || len(hits.Hits) != 100 || hits.NextCursor == nil ||
		hits.Hits[0].Room.ID != g.ID || hits.Hits[0].Message.Seq != 149 {
		t.Errorf("search apples = %d, %d hits, first %+v; want 100 newest first from 149 and a cursor", st, len(hits.Hits), hits.Hits[0].Message)
	}
	if st := bob.do("GET", "/api/me/search?q=apples&limit=100&cursor="+url.QueryEscape(*hits.NextCursor), nil, &hits); st != 200 ||
		len(hits.Hits) != 47 || hits.NextCursor != nil {
		t.Errorf("search apples page 2 = %d, %d hits; want the other 47 (150 and 10 edited, 5 deleted)", st, len(hits.Hits))
	}
	for _, q := range []string{`"`, "*", "()", "a+b+c+d+e+f+g+h+i"} {
		if st := bob.do("GET", "/api/me/search?q="+q, nil, nil); st != http.StatusBadRequest {
			t.Errorf("search %q = %d, want 400", q, st)
		}
	}
	if st := bob.do("DELETE", "/api/rooms/"+g.ID+"/members/me", nil, nil); st != http.StatusNoContent {
		t.Fatalf("leave: %d", st)
	}
	if st := bob.do("GET", "/api/me/search?q=apples", nil, &hits); st != 200 || len(hits.Hits) != 0 {
		t.Errorf("search after leaving = %d, %d hits; want none", st, len(hits.Hits))
	}
}

// TestClusterChanges: an edit and a deletion on node 1 show in node 2's
// newest page and room list (Redis hot data) and in its older pages (its
// own history cache, told by the relay) within a settle.
func TestClusterChanges(t *testing.T) {
	env := needCluster(t)
	n1, n2 := startNode(t, env, "one", oneAddress, noSendLimit), startNode(t, env, "two", oneAddress, noSendLimit)
	r, ms := groupRoom(t, []*Main{n1, n2}, "chg", 2)
	alice, bob := ms[0].c, on(ms[1].c, n2)
	alice = on(alice, n1)
	msgs := "/api/rooms/" + r.ID + "/messages"
	for i := 1; i <= 120; i++ {
		if st := alice.do("POST", msgs, map[string]string{"body": fmt.Sprintf("m%d", i)}, nil); st != http.StatusCreated {
			t.Fatalf("send %d: %d", i, st)
		}
	}
	older := msgs + "?before=21&limit=20"
	var p changedPage
	var list roomList
	for range 2 { // warm node 2: its history block, the Redis window and room list
		bob.do("GET", older, nil, &p)
		bob.do("GET", msgs+"?limit=10", nil, &p)
		bob.do("GET", "/api/me/rooms", nil, &list)
	}
	if st := alice.do("PATCH", msgs+"/120", map[string]string{"body": "edited last"}, nil); st != 200 {
		t.Fatalf("edit 120: %d", st)
	}
	if st := alice.do("PATCH", msgs+"/7", map[string]string{"body": "edited seven"}, nil); st != 200 {
		t.Fatalf("edit 7: %d", st)
	}
	if st := alice.do("DELETE", msgs+"/119", nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete 119: %d", st)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var newest, old changedPage
		bob.do("GET", msgs+"?limit=10", nil, &newest)
		bob.do("GET", older, nil, &old)
		bob.do("GET", "/api/me/rooms", nil, &list)
		last, _ := bodyAt(newest, 120)
		gone, ok := bodyAt(newest, 119)
		seven, _ := bodyAt(old, 7)
		listOK := len(list.Rooms) == 1 && list.Rooms[0].LastMessage != nil && list.Rooms[0].LastMessage.Body == "edited last" &&
			list.Rooms[0].Room.LastChange == 3
		if last == "edited last" && ok && gone == "" && seven == "edited seven" && listOK {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node 2 after the changes on node 1: seq 120 %q, seq 119 %q, seq 7 %q, room list ok %v %+v",
				last, gone, seven, listOK, list)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
