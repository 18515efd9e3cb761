package main

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley/servicetest"
	"parley/stomp"
)

// TestClusterRedisRestartRecovery measures what issue 11 measured: two
// nodes, a sender and a subscriber on each, Redis SIGKILLed and started
// again empty 1.35 s into the run; it reports how long after Redis was
// back the subscribers had every receipted message, and their lag. It is
// a measurement, run when PARLEY_MEASURE_RECOVERY is set:
//
//	PARLEY_MEASURE_RECOVERY=1 PARLEY_TEST_POSTGRES=… PARLEY_TEST_AMQP=… PARLEY_TEST_REDIS=… \
//	  go test -run TestClusterRedisRestartRecovery -v ./cmd/parley/
func TestClusterRedisRestartRecovery(t *testing.T) {
	if os.Getenv("PARLEY_MEASURE_RECOVERY") == "" {
		t.Skip("a measurement: set PARLEY_MEASURE_RECOVERY=1 (with the cluster services) to run it")
	}
	env := needCluster(t)
	rs := servicetest.StartRedis(t)
	env.redis = rs.URL()
	a, b := startNode(t, env, "a"), startNode(t, env, "b")
	const perNode = 1 // sender connections per node
	r, ms := groupRoom(t, []*Main{a, b}, "recovery", 2*perNode+2)
	var senders []*stompClient
	for i := range 2 * perNode {
		senders = append(senders, dialStomp(t, []*Main{a, b}[i%2], "websocket", ms[i].c.token))
	}
	subs := []*stompClient{subscribe(t, a, ms[2*perNode].c.token, r.ID, -1), subscribe(t, b, ms[2*perNode+1].c.token, r.ID, -1)}
	for _, sc := range subs {
		// subscribe's receipt read left a 10 s read deadline, and the
		// readers below call sc.r.Read without renewing it: on a
		// websocket.NetConn a deadline that expires during a Read closes
		// the connection, and the subscribers stop 10 s in. The wait for
		// everything is bounded below and closes the sockets instead.
		sc.conn.SetReadDeadline(time.Time{})
	}
	settle(t, env, spreadOver([]*Main{a, b}, ms)...)

	// Each sender waits for its receipt, then pause: as fast as one
	// connection's commits go (about 130 a second each here).
	const run, pause = 8 * time.Second, 2 * time.Millisecond
	var mu sync.Mutex
	receipted := map[int64]time.Time{}
	start := time.Now()
	var wg sync.WaitGroup
	for i, sc := range senders {
		background(t, &wg, func() error {
			for n := 0; time.Since(start) < run; n++ {
				if err := sc.write(fmt.Sprintf("SEND\ndestination:/app/rooms.%s\nreceipt:r%d\n\nm%d-%d\x00", r.ID, n, i, n)); err != nil {
					return err
				}
				f, err := sc.next()
				if err != nil {
					return fmt.Errorf("sender %d receipt %d: %w", i, n, err)
				}
				if f.Command != stomp.Receipt {
					return fmt.Errorf("sender %d: got %v, want RECEIPT", i, f)
				}
				seq, _ := strconv.ParseInt(string(f.Get("seq")), 10, 64)
				mu.Lock()
				receipted[seq] = time.Now()
				mu.Unlock()
				time.Sleep(pause)
			}
			return nil
		})
	}
	got := make([]map[int64]time.Time, len(subs))
	var done atomic.Bool // the test closes the subscribers' sockets
	var rwg sync.WaitGroup
	beats := make(chan struct{})
	defer close(beats)
	for _, sc := range subs { // the client's heart-beats, so that a quiet subscriber stays connected
		go func() {
			tick := time.NewTicker(3 * time.Second)
			defer tick.Stop()
			for {
				select {
				case <-beats:
					return
				case <-tick.C:
					sc.write("\n")
				}
			}
		}()
	}
	for i, sc := range subs {
		got[i] = map[int64]time.Time{}
		rwg.Go(func() {
			for {
				f, err := sc.r.Read()
				if err != nil { // closed by the test once done, or broken
					// Not "fewer than receipted": a subscriber can be
					// ahead of the receipts its senders have read.
					if !done.Load() {
						mu.Lock()
						n := len(got[i])
						mu.Unlock()
						t.Logf("subscriber on node %c: read after %d messages: %v", "ab"[i], n, err)
					}
					return
				}
				if f.Command == stomp.Error {
					t.Logf("subscriber on node %c: ERROR %s %s", "ab"[i], f.Get("message"), f.Body)
					return
				}
				if f.Command != stomp.Message {
					continue
				}
				seq, _ := strconv.ParseInt(string(f.Get("seq")), 10, 64)
				mu.Lock()
				got[i][seq] = time.Now()
				mu.Unlock()
			}
		})
	}
	time.Sleep(1350 * time.Millisecond)
	if os.Getenv("PARLEY_MEASURE_NO_FAULT") == "" {
		rs.Kill()
		rs.Start()
	}
	back := time.Now()
	wg.Wait()
	ended := time.Now()
	// Each subscriber has everything, or 60 s have passed.
	for {
		mu.Lock()
		all := len(got[0]) >= len(receipted) && len(got[1]) >= len(receipted)
		mu.Unlock()
		if all || time.Since(ended) > 60*time.Second {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	done.Store(true)
	for _, sc := range subs {
		sc.conn.Close()
	}
	rwg.Wait()
	for _, m := range []*Main{a, b} {
		for _, name := range []string{"parley_cluster_held_messages", "parley_cluster_gap_skipped_total", "parley_cluster_gap_filled_total", "parley_cluster_duplicates_total"} {
			t.Logf("node %s: %s %v", m.Config.NodeID, name, metric(t, m, name))
		}
	}

	mu.Lock()
	defer mu.Unlock()
	total := int64(len(receipted))
	t.Logf("%d messages receipted in %v; Redis killed and restarted empty at %v", total, ended.Sub(start).Round(time.Millisecond), back.Sub(start).Round(time.Millisecond))
	for i := range subs {
		var lags []time.Duration
		var caughtUp time.Time // the delivery of the last message that arrived over 1 s late
		missing := 0
		for seq, at := range receipted {
			d, ok := got[i][seq]
			if !ok {
				missing++
				continue
			}
			lag := d.Sub(at)
			lags = append(lags, lag)
			if lag > time.Second && d.After(caughtUp) {
				caughtUp = d
			}
		}
		slices.Sort(lags)
		p := func(q float64) time.Duration {
			if len(lags) == 0 {
				return 0
			}
			return lags[int(q*float64(len(lags)-1))].Round(time.Millisecond)
		}
		recovered := "never over 1 s behind"
		if !caughtUp.IsZero() {
			recovered = fmt.Sprintf("last message over 1 s late delivered %v after Redis was back", caughtUp.Sub(back).Round(time.Millisecond))
		}
		t.Logf("subscriber on node %c: %d of %d messages, %d missing; lag p50 %v p99 %v max %v; %s",
			"ab"[i], len(got[i]), total, missing, p(0.5), p(0.99), p(1), recovered)
		if missing > 0 {
			var holes []int64
			for seq := int64(1); seq <= total && len(holes) < 10; seq++ {
				if _, ok := got[i][seq]; !ok {
					holes = append(holes, seq)
				}
			}
			t.Logf("subscriber on node %c: first missing seqs %v; last received %v", "ab"[i], holes, slices.Max(slices.Collect(maps.Keys(got[i]))))
			t.Errorf("subscriber on node %c: %d receipted messages never arrived", "ab"[i], missing)
		}
	}
}
