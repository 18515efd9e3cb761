package main

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"
)

// TestRoomRetention: on a node that keeps messages forever by default, a
// room's owner sets a retention of its own with PATCH /api/rooms/{id} (a
// plain member may not); the other member sees the new value live (a
// member event with action room) and in the room's info; the sweeper then
// deletes that room's messages older than it as tombstones, and leaves a
// room without a retention of its own alone. The test waits for events,
// not for a time.
func TestRoomRetention(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.Retention, c.RetentionInterval = 0, 20*time.Millisecond })
	alice, au := mustSignUp(t, m.Addr(), "alice")
	bob, _ := mustSignUp(t, m.Addr(), "bob")
	var short, kept room
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "short"}, &short); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "kept"}, &kept); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := bob.do("POST", "/api/rooms/"+short.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: %d", st)
	}
	sc := subscribeEvents(t, m, bob.token, short.ID, false)
	if st := alice.do("POST", "/api/rooms/"+kept.ID+"/messages", map[string]string{"body": "kept forever"}, nil); st != http.StatusCreated {
		t.Fatalf("send: %d", st)
	}
	for _, body := range []string{"short one", "short two"} {
		if st := alice.do("POST", "/api/rooms/"+short.ID+"/messages", map[string]string{"body": body}, nil); st != http.StatusCreated {
			t.Fatalf("send: %d", st)
		}
	}

	if st := bob.do("PATCH", "/api/rooms/"+short.ID, map[string]any{"retention_seconds": 1}, nil); st != http.StatusForbidden {
		t.Errorf("PATCH retention_seconds as a member: %d, want 403", st)
	}
	var after struct {
		RetentionSeconds int64 `json:"retention_seconds"`
	}
	if st := alice.do("PATCH", "/api/rooms/"+short.ID, map[string]any{"retention_seconds": 1}, &after); st != http.StatusOK || after.RetentionSeconds != 1 {
		t.Fatalf("PATCH retention_seconds 1 as the owner: %d %+v, want 200 and 1", st, after)
	}
	f := nextEvent(t, sc, "member", au.ID)
	var info struct {
		RetentionSeconds int64 `json:"retention_seconds"`
	}
	if err := json.Unmarshal(f.Body, &info); err != nil || string(f.Get("action")) != "room" || info.RetentionSeconds != 1 {
		t.Errorf("member event after the PATCH: %v %s (%v), want action room, retention_seconds 1", f, f.Body, err)
	}
	info.RetentionSeconds = 0
	if st := bob.do("GET", "/api/rooms/"+short.ID, nil, &info); st != http.StatusOK || info.RetentionSeconds != 1 {
		t.Errorf("GET the room as bob: %d %+v, want retention_seconds 1", st, info)
	}

	for want := int64(1); want <= 2; want++ {
		f, msg := nextChange(t, sc)
		if string(f.Get("event")) != "deleted" || msg.Seq != want || msg.Body != "" || msg.DeletedAt == nil {
			t.Fatalf("got %v %+v, want message %d deleted by the room's retention", f, msg, want)
		}
	}
	// The pass that deleted them visited only the rooms with their own
	// retention: the other room's older message stays.
	var page struct {
		Messages []message `json:"messages"`
	}
	if st := alice.do("GET", "/api/rooms/"+kept.ID+"/messages?after=0", nil, &page); st != http.StatusOK ||
		len(page.Messages) != 1 || page.Messages[0].Body != "kept forever" {
		t.Errorf("history of the room without a retention of its own: %d %+v, want its message", st, page.Messages)
	}
}

// TestClusterRoomRetention: two nodes over one PostgreSQL store and Redis,
// keeping messages forever by default. The room's owner, on node one, sets
// a retention of 1 s; the member on node two sees it live and in the
// room's info his node serves (its Redis hot data), and gets each of the
// room's messages deleted once, whichever node swept it.
func TestClusterRoomRetention(t *testing.T) {
	env := needCluster(t)
	forever := func(c *Config) { c.Retention, c.RetentionInterval = 0, 20*time.Millisecond }
	nodes := []*Main{startNode(t, env, "one", forever), startNode(t, env, "two", forever)}
	r, ms := groupRoom(t, nodes, "roomret", 2)
	alice, bob := ms[0], ms[1] // on nodes one and two
	var before struct {
		RetentionSeconds int64 `json:"retention_seconds"`
	}
	if st := bob.c.do("GET", "/api/rooms/"+r.ID, nil, &before); st != http.StatusOK || before.RetentionSeconds != 0 {
		t.Fatalf("GET the room on node two: %d %+v, want retention_seconds 0", st, before)
	}
	sc := subscribeEvents(t, nodes[1], bob.c.token, r.ID, false)
	for _, body := range []string{"short one", "short two"} {
		if st := alice.c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": body}, nil); st != http.StatusCreated {
			t.Fatalf("send: %d", st)
		}
	}
	if st := alice.c.do("PATCH", "/api/rooms/"+r.ID, map[string]any{"retention_seconds": 1}, nil); st != http.StatusOK {
		t.Fatalf("PATCH retention_seconds on node one: %d", st)
	}
	f := nextEvent(t, sc, "member", alice.u.ID)
	var info struct {
		RetentionSeconds int64 `json:"retention_seconds"`
	}
	if err := json.Unmarshal(f.Body, &info); err != nil || info.RetentionSeconds != 1 {
		t.Errorf("member event on node two: %v %s (%v), want retention_seconds 1", f, f.Body, err)
	}
	info.RetentionSeconds = 0
	if st := bob.c.do("GET", "/api/rooms/"+r.ID, nil, &info); st != http.StatusOK || info.RetentionSeconds != 1 {
		t.Errorf("GET the room on node two after the PATCH: %d %+v, want retention_seconds 1", st, info)
	}
	got := map[int64]bool{}
	for range 2 {
		f, msg := nextChange(t, sc)
		if string(f.Get("event")) != "deleted" || msg.Body != "" || got[msg.Seq] {
			t.Fatalf("node two got %v %+v, want each message deleted once", f, msg)
		}
		got[msg.Seq] = true
	}
}
