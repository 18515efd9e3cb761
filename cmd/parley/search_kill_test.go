package main

import (
	"bufio"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"parley/parleytest"
)

// TestSearchIndexAfterKill builds a search backlog in a real `parley
// serve` (an indexer of one message a transaction, --search-batch 1,
// behind 16 concurrent senders), kills it with SIGKILL while the indexer
// is half-way through, restarts it on the same data, waits for
// parley_search_behind_messages to reach 0 and counts the hits: every
// acknowledged message is found exactly once (the index's position moved
// in the same transactions as its entries). Searches go to the store's
// index (--cache-search-mib 0), not the node's memory.
func TestSearchIndexAfterKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts server processes")
	}
	dir := t.TempDir()
	srv, addr := startServerProcess(t, dir, "--search-batch", "1", "--cache-search-mib", "0", "--rest-send-rate", "0")
	c, _ := mustSignUp(t, addr, "indexed")
	var r room
	if st := c.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "backlog"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	const senders, each = 16, 60
	var (
		mu    sync.Mutex
		acked = map[string]bool{} // ids of every 201
		wg    sync.WaitGroup
	)
	tr := &http.Transport{MaxIdleConnsPerHost: senders}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	for i := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range each {
				m, ok := postMessage(hc, addr, c.token, r.ID, fmt.Sprintf("killword sender%d item%d", i, j))
				if !ok {
					t.Errorf("send %d of sender %d failed", j, i)
					return
				}
				mu.Lock()
				acked[m.ID] = true
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Kill once the indexer has committed a round and has more to do.
	var indexed, behind float64
	parleytest.Poll(30*time.Second, func() bool {
		indexed = scrapeMetric(t, hc, addr, "parley_search_lag_seconds_count")
		behind = scrapeMetric(t, hc, addr, "parley_search_behind_messages")
		return indexed > 0
	})
	if err := srv.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatalf("kill: %v", err)
	}
	srv.Wait()
	tr.CloseIdleConnections()
	t.Logf("killed with %v messages indexed and %v behind (of %d)", indexed, behind, len(acked))
	if behind == 0 {
		t.Logf("the indexer had caught up before the kill: the restart had nothing to resume")
	}

	_, addr = startServerProcess(t, dir, "--cache-search-mib", "0")
	c.base = "http://" + addr
	parleytest.Poll(30*time.Second, func() bool {
		return scrapeMetric(t, hc, addr, "parley_search_behind_messages") == 0
	})
	hits := map[string]int{}
	cursor := ""
	for page := 0; ; page++ {
		var res struct {
			Hits []struct {
				Message message `json:"message"`
			} `json:"hits"`
			NextCursor *string `json:"next_cursor"`
		}
		q := "/api/me/search?q=killword&limit=100"
		if cursor != "" {
			q += "&cursor=" + url.QueryEscape(cursor)
		}
		if st := c.do("GET", q, nil, &res); st != 200 {
			t.Fatalf("search page %d: %d", page, st)
		}
		for _, h := range res.Hits {
			hits[h.Message.ID]++
		}
		if res.NextCursor == nil || len(res.Hits) == 0 || page > 100 {
			break
		}
		cursor = *res.NextCursor
	}
	if len(hits) != len(acked) {
		t.Errorf("search after the restart found %d messages, want the %d acknowledged", len(hits), len(acked))
	}
	for id, n := range hits {
		if n != 1 || !acked[id] {
			t.Errorf("message %s found %d times (acknowledged: %v), want once", id, n, acked[id])
		}
	}
	// One word of one message: its own entry, once.
	var res struct {
		Hits []struct {
			Message message `json:"message"`
		} `json:"hits"`
	}
	if st := c.do("GET", "/api/me/search?q=sender3+item7", nil, &res); st != 200 || len(res.Hits) != 1 {
		t.Errorf("search sender3 item7 = %d, %d hits; want 1", st, len(res.Hits))
	}
}

// scrapeMetric reads one sample (a name without labels, or with them
// written as /metrics writes them) from the /metrics of the server at
// addr; 0 when it is not there.
func scrapeMetric(t *testing.T, hc *http.Client, addr, sample string) float64 {
	t.Helper()
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), sample+" "); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}
