package retention_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
	"parley/retention"
	"parley/sqlite"
)

// BenchmarkSendDuringSweep measures what a retention sweep costs the sends
// beside it: on the SQLite store (sync full), a room holds PARLEY_SWEEP_N
// (100,000) expired messages, deleted PARLEY_SWEEP_INFLIGHT
// (DefaultInFlight) at a time; 4 senders send to another room for 3 s with
// no sweep, then while a sweep deletes all of them. It reports the sends'
// p50 and p99 of both phases, and the sweep's time and rate. One run is
// one measurement: use -benchtime=1x.
func BenchmarkSendDuringSweep(b *testing.B) {
	n := 100_000
	if v := os.Getenv("PARLEY_SWEEP_N"); v != "" {
		n, _ = strconv.Atoi(v)
	}
	inflight := retention.DefaultInFlight
	if v := os.Getenv("PARLEY_SWEEP_INFLIGHT"); v != "" {
		inflight, _ = strconv.Atoi(v)
	}
	ctx := context.Background()
	for range b.N {
		s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), "parley.db")})
		if err != nil {
			b.Fatalf("Open() error = %v", err)
		}
		users := parleytest.MustCreateUsers(b, s, "u", 5)
		old := parleytest.MustCreateRoom(b, s, users[0], "old", 0)
		live := parleytest.MustCreateRoom(b, s, users[0], "live", 0)
		for _, u := range users[1:] {
			parleytest.MustJoin(b, s, live, u)
		}
		fill(b, s, old, users[0], n)
		cutoff := parley.Now().Add(time.Microsecond)

		idle := sendFor(b, s, live, users[1:], func(stop <-chan struct{}) { time.Sleep(3 * time.Second) })
		var swept int
		var took time.Duration
		during := sendFor(b, s, live, users[1:], func(<-chan struct{}) {
			start := time.Now()
			swept, err = retention.Sweep(ctx, s, cutoff.Add(time.Hour), time.Hour, retention.DefaultBatch, inflight)
			took = time.Since(start)
		})
		if err != nil || swept != n {
			b.Fatalf("Sweep() = %d, %v, want %d deleted", swept, err, n)
		}
		b.ReportMetric(float64(pct(idle, 50).Microseconds()), "idle-p50-µs")
		b.ReportMetric(float64(pct(idle, 99).Microseconds()), "idle-p99-µs")
		b.ReportMetric(float64(pct(during, 50).Microseconds()), "sweep-p50-µs")
		b.ReportMetric(float64(pct(during, 99).Microseconds()), "sweep-p99-µs")
		b.ReportMetric(took.Seconds(), "sweep-s")
		b.ReportMetric(float64(n)/took.Seconds(), "expired/s")
		b.Logf("%d expired swept in %v; sends: %d idle (p50 %v, p99 %v), %d during the sweep (p50 %v, p99 %v)",
			n, took, len(idle), pct(idle, 50), pct(idle, 99), len(during), pct(during, 50), pct(during, 99))
		s.Close()
	}
}

// fill sends n messages to r from 16 goroutines.
func fill(b *testing.B, s parley.Store, r parley.Room, u parley.User, n int) {
	var wg sync.WaitGroup
	for w := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < n; i += 16 {
				if _, _, err := s.Send(context.Background(), parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name,
					Body: fmt.Sprintf("expired message %d with a few ordinary words", i)}); err != nil {
					b.Errorf("fill: %v", err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// sendFor sends from each user, one send after another, while during runs,
// and returns every send's latency.
func sendFor(b *testing.B, s parley.Store, r parley.Room, users []parley.User, during func(stop <-chan struct{})) []time.Duration {
	stop := make(chan struct{})
	var mu sync.Mutex
	var lat []time.Duration
	var wg sync.WaitGroup
	for _, u := range users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var mine []time.Duration
			for {
				select {
				case <-stop:
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
					return
				default:
				}
				t0 := time.Now()
				if _, _, err := s.Send(context.Background(), parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: "live"}); err != nil {
					b.Errorf("send: %v", err)
					return
				}
				mine = append(mine, time.Since(t0))
			}
		}()
	}
	during(stop)
	close(stop)
	wg.Wait()
	slices.Sort(lat)
	return lat
}

// pct returns the p-th percentile of sorted.
func pct(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, len(sorted)*p/100)]
}
