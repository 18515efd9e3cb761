package sqlite

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
)

// BenchmarkSendWhileErasing: what the TRUNCATE checkpoints of deletions
// cost sends. 16 senders (-cpu sets GOMAXPROCS; 8 a processor on 2) send
// durably (sync=full) into rooms of their own, without deletions and with
// one every 100 ms (each asks for a TRUNCATE; one runs a second at most).
// It reports each send's latency (p50, p99, max) and the TRUNCATEs run:
//
//	go test -run '^$' -bench SendWhileErasing -benchtime 20000x -count 3 ./sqlite/
func BenchmarkSendWhileErasing(b *testing.B) {
	for _, deletes := range []bool{false, true} {
		b.Run(fmt.Sprintf("deletes=%v", deletes), func(b *testing.B) { benchmarkSendWhileErasing(b, deletes) })
	}
}

func benchmarkSendWhileErasing(b *testing.B, deletes bool) {
	const senders = 16
	s, err := Open(context.Background(), Config{Path: filepath.Join(b.TempDir(), "bench.db"), Sync: SyncFull})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	users := parleytest.MustCreateUsers(b, s, "u", senders)
	rooms := make([]parley.Room, senders)
	for i, u := range users {
		rooms[i] = parleytest.MustCreateRoom(b, s, u, "r", 0)
	}
	var (
		mu   sync.Mutex // guards lat
		lat  = make([]time.Duration, 0, b.N)
		last [senders]atomic.Pointer[parley.Message]
		next atomic.Int64
	)
	stop, deleted := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(deleted)
		if !deletes {
			return
		}
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-t.C:
			}
			if m := last[i%senders].Load(); m != nil {
				s.DeleteMessage(context.Background(), parley.Deletion{RoomID: m.RoomID, Seq: m.Seq, ActorID: m.SenderID})
			}
		}
	}()
	parleytest.Eventually(b, 10*time.Second, func() bool { return s.ck.erases.Load() == 1 }, "no TRUNCATE at Open")
	b.ResetTimer()
	var wg sync.WaitGroup
	for i := range senders {
		wg.Go(func() {
			for next.Add(1) <= int64(b.N) {
				start := time.Now()
				m := parleytest.MustSend(b, s, rooms[i], users[i], "a chat message of a typical length, about sixty bytes long.")
				d := time.Since(start)
				last[i].Store(&m)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(stop)
	<-deleted
	slices.Sort(lat)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(lat[len(lat)/2]), "p50-ms")
	b.ReportMetric(ms(lat[len(lat)*99/100]), "p99-ms")
	b.ReportMetric(ms(lat[len(lat)-1]), "max-ms")
	b.ReportMetric(float64(s.ck.erases.Load()-1), "truncates")
}
