package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"parley/parleytest"
	"parley/stomp"
)

// TestRetention: with --retention, a real node deletes the messages older
// than the retention as tombstones: an events subscriber gets a deleted
// event for each, since-change replays them, a since-seq from below them
// resumes with the tombstones and no error, the history pages show them
// empty, and search no longer finds their words. The test waits for the
// deleted events, not for a time.
func TestRetention(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.Retention, c.RetentionInterval = time.Second, 20*time.Millisecond })
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	bob, _ := mustSignUp(t, m.Addr(), "bob")
	var r room
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "retention"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: %d", st)
	}
	sc := subscribeEvents(t, m, bob.token, r.ID, false)
	for _, body := range []string{"ephemeral one", "ephemeral two"} {
		if st := alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": body}, nil); st != http.StatusCreated {
			t.Fatalf("send: %d", st)
		}
	}
	for want := int64(1); want <= 2; want++ {
		f, msg := nextChange(t, sc)
		if string(f.Get("event")) != "deleted" || msg.Seq != want || msg.Body != "" || msg.DeletedAt == nil {
			t.Fatalf("got %v %+v, want message %d deleted by retention", f, msg, want)
		}
	}

	// The pass counts its deletions once it is over.
	parleytest.Eventually(t, 10*time.Second, func() bool { return retentionDeleted(t, m) == "2" },
		"parley_retention_deleted_total = %q, want 2", retentionDeleted(t, m))

	var page struct {
		Messages []message `json:"messages"`
	}
	if st := bob.do("GET", "/api/rooms/"+r.ID+"/messages?after=0", nil, &page); st != http.StatusOK || len(page.Messages) < 2 ||
		page.Messages[0].Body != "" || page.Messages[1].Body != "" {
		t.Errorf("history after the sweep: %d %+v, want messages 1 and 2 as tombstones", st, page.Messages)
	}
	var found struct {
		Messages []message `json:"messages"`
	}
	if st := bob.do("GET", "/api/rooms/"+r.ID+"/messages?q="+url.QueryEscape("ephemeral"), nil, &found); st != http.StatusOK || len(found.Messages) != 0 {
		t.Errorf("search for an expired word: %d %+v, want nothing", st, found.Messages)
	}

	// since-change 0 replays both deletions; since-seq 0 (below them)
	// resumes with both tombstones, then live, with no ERROR.
	ev := dialStomp(t, m, "websocket", bob.token)
	ev.send("SUBSCRIBE\nid:ev\ndestination:/topic/rooms." + r.ID + ".events\nsince-change:0\n\n\x00")
	for want := int64(1); want <= 2; want++ {
		if f, msg := nextChange(t, ev); string(f.Get("event")) != "deleted" || msg.Seq != want {
			t.Errorf("since-change replay: got %v %+v, want message %d deleted", f, msg, want)
		}
	}
	b := dialStomp(t, m, "websocket", bob.token)
	b.send("SUBSCRIBE\nid:s\ndestination:/topic/rooms." + r.ID + "\nsince-seq:0\n\n\x00")
	for want := 1; want <= 2; want++ {
		f := b.read()
		if f.Command != stomp.Message || string(f.Get("seq")) != fmt.Sprint(want) || len(f.Body) != 0 {
			t.Fatalf("since-seq 0: got %v, want the tombstone of message %d", f, want)
		}
	}
	if st := alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "fresh"}, nil); st != http.StatusCreated {
		t.Fatalf("send: %d", st)
	}
	if f := b.read(); f.Command != stomp.Message || string(f.Get("seq")) != "3" || string(f.Body) != "fresh" {
		t.Errorf("since-seq 0 then live: got %v, want message 3", f)
	}
}

// retentionDeleted returns the value of parley_retention_deleted_total
// on m's /metrics ("" when it is not there).
func retentionDeleted(t *testing.T, m *Main) string {
	t.Helper()
	resp, err := http.Get("http://" + m.MetricsAddr() + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	for _, line := range strings.Split(string(body), "\n") {
		if v, ok := strings.CutPrefix(line, "parley_retention_deleted_total "); ok {
			return v
		}
	}
	return ""
}

// TestClusterRetention: two nodes with --retention over one PostgreSQL
// store; the messages sent on node one expire once (the nodes' sweepers
// take turns by the store's lock, and a tombstone is not deleted twice),
// and an events subscriber on node two gets each deletion, whichever node
// swept it.
func TestClusterRetention(t *testing.T) {
	env := needCluster(t)
	short := func(c *Config) { c.Retention, c.RetentionInterval = time.Second, 20*time.Millisecond }
	nodes := []*Main{startNode(t, env, "one", short), startNode(t, env, "two", short)}
	r, ms := groupRoom(t, nodes, "ret", 2)
	alice, bob := ms[0], ms[1] // on nodes one and two
	sc := subscribeEvents(t, nodes[1], bob.c.token, r.ID, false)
	for _, body := range []string{"ephemeral one", "ephemeral two"} {
		if st := alice.c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": body}, nil); st != http.StatusCreated {
			t.Fatalf("send: %d", st)
		}
	}
	got := map[int64]bool{}
	for range 2 {
		f, msg := nextChange(t, sc)
		if string(f.Get("event")) != "deleted" || msg.Body != "" || got[msg.Seq] {
			t.Fatalf("node two got %v %+v, want each message deleted once", f, msg)
		}
		got[msg.Seq] = true
	}
	// The sweeper counts a pass's deletions once the pass is over.
	deleted := func() int { return nodes[0].expiry.Deleted() + nodes[1].expiry.Deleted() }
	parleytest.Eventually(t, 10*time.Second, func() bool { return deleted() == 2 },
		"the nodes' sweepers deleted %d messages, want 2", deleted())
}
