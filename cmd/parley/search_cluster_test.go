package main

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"parley"
)

// TestClusterSearchIndex: three nodes on one PostgreSQL each run the
// search indexer at once. Messages sent on every node are indexed exactly
// once over the cluster (the nodes' parley_search_lag_seconds counts sum
// to the number of messages: no message indexed by two nodes), and each
// node's search finds each of them once; an edit and a deletion reach the
// index, and the deleted message is found on no node.
func TestClusterSearchIndex(t *testing.T) {
	env := needCluster(t)
	nodes := []*Main{startNode(t, env, "a"), startNode(t, env, "b"), startNode(t, env, "c")}
	const users, perUser = 6, 20
	r, ms := groupRoom(t, nodes, "indexed", users)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sent []message
	for i, mb := range ms {
		wg.Go(func() {
			c := on(mb.c, nodes[i%3])
			for j := range perUser {
				var m message
				if st := c.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": fmt.Sprintf("clusterword u%d m%d", i, j)}, &m); st != http.StatusCreated {
					t.Errorf("send: %d", st)
					continue
				}
				mu.Lock()
				sent = append(sent, m)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	waitIndexed := func() {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := parley.WaitIndexed(ctx, nodes[0].durable); err != nil {
			t.Fatal(err)
		}
	}
	waitIndexed()
	var indexed float64
	for _, m := range nodes {
		indexed += metric(t, m, "parley_search_lag_seconds_count")
	}
	if indexed != float64(len(sent)) {
		t.Errorf("the nodes indexed %v messages together, want each of the %d once", indexed, len(sent))
	}
	search := func(n int, q string) map[string]int {
		t.Helper()
		c := on(ms[0].c, nodes[n])
		found := map[string]int{}
		cursor := ""
		for page := 0; page < 100; page++ {
			var res struct {
				Hits []struct {
					Message message `json:"message"`
				} `json:"hits"`
				NextCursor *string `json:"next_cursor"`
			}
			path := "/api/me/search?limit=50&q=" + url.QueryEscape(q)
			if cursor != "" {
				path += "&cursor=" + url.QueryEscape(cursor)
			}
			if st := c.do("GET", path, nil, &res); st != 200 {
				t.Fatalf("search %q on node %d: %d", q, n, st)
			}
			for _, h := range res.Hits {
				found[h.Message.ID]++
			}
			if res.NextCursor == nil {
				break
			}
			cursor = *res.NextCursor
		}
		return found
	}
	for n := range nodes {
		found := search(n, "clusterword")
		if len(found) != len(sent) {
			t.Errorf("node %d finds %d messages, want %d", n, len(found), len(sent))
		}
		for id, k := range found {
			if k != 1 {
				t.Errorf("node %d finds message %s %d times, want once", n, id, k)
			}
		}
	}

	// An edit on node b and a deletion on node c, of messages of user 0.
	var mine []message
	for _, m := range sent {
		if m.SenderID == ms[0].u.ID {
			mine = append(mine, m)
		}
	}
	edited, deleted := mine[0], mine[1]
	if st := on(ms[0].c, nodes[1]).do("PATCH", fmt.Sprintf("/api/rooms/%s/messages/%d", r.ID, edited.Seq), map[string]string{"body": "rewritten elsewhere"}, nil); st != 200 {
		t.Fatalf("edit: %d", st)
	}
	if st := on(ms[0].c, nodes[2]).do("DELETE", fmt.Sprintf("/api/rooms/%s/messages/%d", r.ID, deleted.Seq), nil, nil); st != http.StatusNoContent {
		t.Fatalf("delete: %d", st)
	}
	waitIndexed()
	for n := range nodes {
		found := search(n, "clusterword")
		if len(found) != len(sent)-2 || found[edited.ID] != 0 || found[deleted.ID] != 0 {
			t.Errorf("node %d after an edit and a deletion finds %d messages (edited %d, deleted %d times), want %d, neither",
				n, len(found), found[edited.ID], found[deleted.ID], len(sent)-2)
		}
		if found := search(n, "rewritten elsewhere"); len(found) != 1 || found[edited.ID] != 1 {
			t.Errorf("node %d finds the edit's words in %v, want message %s", n, found, edited.ID)
		}
	}
}
