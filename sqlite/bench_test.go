package sqlite_test

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
	"parley/sqlite"
)

// benchSync selects the sync setting of the write benchmark:
// go test -run '^$' -bench SendParallel ./sqlite/ -args -sync normal. A
// flag, not an environment variable, so that the setting shows in the
// command.
var benchSync = sqlite.SyncFull

// benchSenders is the number of concurrent senders of BenchmarkSendParallel.
// With an fsync per commit, a commit takes what the fsync takes, and a
// batch holds at most the senders waiting meanwhile: throughput grows with
// the senders until the writer's CPU or MaxBatch is the limit.
var benchSenders = 128

// benchMaxBatch, when set, is the store's Config.MaxBatch in
// BenchmarkSendParallel.
var benchMaxBatch int

// benchKeyed gives every message of BenchmarkSendParallel a client id (the
// idempotency key), as a client with receipts sends them.
var benchKeyed bool

func init() {
	flag.TextVar(&benchSync, "sync", benchSync, "sync setting of BenchmarkSendParallel: full, normal or off")
	flag.BoolVar(&benchKeyed, "keyed", false, "BenchmarkSendParallel: give every message a client id")
	flag.IntVar(&benchMaxBatch, "maxbatch", 0, "Config.MaxBatch of BenchmarkSendParallel (0: the default)")
	flag.IntVar(&benchSenders, "senders", benchSenders, "concurrent senders of BenchmarkSendParallel (rounded up to a multiple of GOMAXPROCS)")
}

// BenchmarkSendParallel stores messages from many concurrent senders
// (-senders, default 128) into 100 rooms, durably (sync=full by default):
// the group-commit write path.
// BenchmarkSendParallel runs with the search index (index=on, the store as
// it serves) and without (index=off, Config.NoSearchIndex): what the
// full-text index costs each send (BENCHMARKS.md). The index trails the
// sends (indexer.go): index=on's time includes waiting, after the last
// send, until every message is indexed (catchup-ms), so msgs/s is a rate
// the indexer sustains, not only the sends'.
func BenchmarkSendParallel(b *testing.B) {
	for _, index := range []bool{true, false} {
		name := "index=on"
		if !index {
			name = "index=off"
		}
		b.Run(name, func(b *testing.B) { benchmarkSendParallel(b, !index) })
	}
}

func benchmarkSendParallel(b *testing.B, noIndex bool) {
	const nRooms = 100
	s := mustOpen(b, sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db"), Sync: benchSync, NoSearchIndex: noIndex, MaxBatch: benchMaxBatch})
	users := parleytest.MustCreateUsers(b, s, "sender", nRooms)
	rooms := make([]parley.Room, nRooms)
	for i, u := range users {
		rooms[i] = parleytest.MustCreateRoom(b, s, u, fmt.Sprint("room", i), 0)
	}
	body := "a chat message of a typical length, about sixty bytes long."
	var next atomic.Uint64
	before, q0, cpu0 := s.BatchStats(), s.Queries(), cpuTime()
	b.SetParallelism(max(1, (benchSenders+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0)))
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			n := next.Add(1)
			i := n % nRooms
			u := users[i]
			client := ""
			if benchKeyed {
				client = fmt.Sprint("c", n)
			}
			if _, _, err := s.Send(ctx, parley.NewMessage{RoomID: rooms[i].ID, SenderID: u.ID, SenderName: u.Name, Body: body, ClientID: client}); err != nil {
				b.Errorf("Send() error = %v", err)
				return
			}
		}
	})
	sent := time.Now()
	behind := s.SearchBehind()
	if err := s.WaitIndexed(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.StopTimer()
	b.ReportMetric(float64(time.Since(sent).Microseconds())/1e3, "catchup-ms")
	b.ReportMetric(float64(behind), "behind-at-end")
	after := s.BatchStats()
	secs := b.Elapsed().Seconds()
	batches := after.Batches - before.Batches
	b.ReportMetric(float64(b.N)/secs, "msgs/s")
	b.ReportMetric(float64(batches)/secs, "commits/s")
	b.ReportMetric(float64(after.Flushes-before.Flushes)/secs, "fsyncs/s")
	b.ReportMetric(float64(after.Requests-before.Requests)/float64(max(batches, 1)), "msgs/commit")
	b.ReportMetric(float64(after.CommitTime-before.CommitTime)/float64(max(batches, 1))/1e3, "µs/commit")
	b.ReportMetric(float64(after.Yields-before.Yields)/float64(max(batches, 1)), "yields/commit")
	b.ReportMetric(float64(s.Queries()-q0)/float64(b.N), "queries/op")
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1e6/float64(b.N), "cpu-µs/op")
}

// readFixture is a user in 50 rooms of 200 messages each.
func readFixture(b *testing.B) (*sqlite.Store, parley.User, []parley.Room) {
	b.Helper()
	const nRooms, perRoom = 50, 200
	s := mustOpen(b, sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db"), Sync: sqlite.SyncOff})
	u := parleytest.MustCreateUser(b, s, "reader")
	others := parleytest.MustCreateUsers(b, s, "other", 4)
	rooms := make([]parley.Room, nRooms)
	for i := range rooms {
		rooms[i] = parleytest.MustCreateRoom(b, s, others[i%4], fmt.Sprint("room", i), 0)
		parleytest.MustJoin(b, s, rooms[i], u)
		for k, o := range others {
			if k != i%4 {
				parleytest.MustJoin(b, s, rooms[i], o) // every sender is a member
			}
		}
	}
	ctx := context.Background()
	done := make(chan error)
	for i := range rooms {
		go func() {
			var err error
			for j := 0; j < perRoom && err == nil; j++ {
				o := others[(i+j)%4]
				if j%4 == 0 {
					o = u
				}
				_, _, err = s.Send(ctx, parley.NewMessage{RoomID: rooms[i].ID, SenderID: o.ID, SenderName: o.Name,
					Body: fmt.Sprintf("message %d of room %d, of a typical chat length", j, i)})
			}
			done <- err
		}()
	}
	for range rooms {
		if err := <-done; err != nil {
			b.Fatalf("Send() error = %v", err)
		}
	}
	return s, u, rooms
}

// BenchmarkRooms reads the first page (20 entries) of the room list of a
// member of 50 rooms, with last messages and unread counts, straight from
// SQLite, from concurrent readers.
func BenchmarkRooms(b *testing.B) {
	s, u, _ := readFixture(b)
	q0, cpu0 := s.Queries(), cpuTime()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			entries, _, err := s.Rooms(ctx, u.ID, "", 20)
			if err != nil || len(entries) != 20 {
				b.Errorf("Rooms() = %d entries, %v", len(entries), err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
	b.ReportMetric(float64(s.Queries()-q0)/float64(b.N), "queries/op")
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1e6/float64(b.N), "cpu-µs/op")
}

// BenchmarkNewestPage reads the newest 50 messages of a room, straight from
// SQLite, from concurrent readers.
func BenchmarkNewestPage(b *testing.B) {
	s, _, rooms := readFixture(b)
	q0, cpu0 := s.Queries(), cpuTime()
	var next atomic.Uint64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			r := rooms[next.Add(1)%uint64(len(rooms))]
			msgs, err := s.Messages(ctx, r.ID, parley.Newest(50))
			if err != nil || len(msgs) != 50 {
				b.Errorf("Messages() = %d messages, %v", len(msgs), err)
				return
			}
		}
	})
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "reads/s")
	b.ReportMetric(float64(s.Queries()-q0)/float64(b.N), "queries/op")
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1e6/float64(b.N), "cpu-µs/op")
}

// cpuTime is the CPU time (user and system) the process has used: per op,
// a measure that other load on the machine disturbs less than wall time.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkSendPaced sends b.N messages into one room at a fixed rate,
// each from its own goroutine, as the members of `parley bench group` do
// at 8×, 16× and 24× of seed 002's load (1,000, 2,000 and 3,000 messages a
// second), and reports each Send's latency (p50, p99: the commit's share
// of a delivery) and the CPU a message costs. With sync=full every
// latency includes the fsync that covers the message.
func BenchmarkSendPaced(b *testing.B) {
	for _, rate := range []int{1000, 2000, 3000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) { benchmarkSendPaced(b, rate) })
	}
}

func benchmarkSendPaced(b *testing.B, rate int) {
	s := mustOpen(b, sqlite.Config{Path: filepath.Join(b.TempDir(), "bench.db"), Sync: benchSync})
	u := parleytest.MustCreateUsers(b, s, "sender", 1)[0]
	room := parleytest.MustCreateRoom(b, s, u, "room", 0)
	body := "a chat message of a typical length, about sixty bytes long."
	lat := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	before, cpu0 := s.BatchStats(), cpuTime()
	b.ResetTimer()
	start := time.Now()
	for i := range b.N {
		time.Sleep(time.Until(start.Add(time.Duration(i) * time.Second / time.Duration(rate))))
		wg.Go(func() {
			t0 := time.Now()
			if _, _, err := s.Send(context.Background(), parley.NewMessage{RoomID: room.ID, SenderID: u.ID, SenderName: u.Name, Body: body}); err != nil {
				b.Errorf("Send() error = %v", err)
			}
			lat[i] = time.Since(t0)
		})
	}
	wg.Wait()
	b.StopTimer()
	after := s.BatchStats()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1e3, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1e3, "p99-ms")
	b.ReportMetric((cpuTime()-cpu0).Seconds()*1e6/float64(b.N), "cpu-µs/op")
	b.ReportMetric(float64(after.Requests-before.Requests)/float64(max(after.Batches-before.Batches, 1)), "msgs/commit")
	b.ReportMetric(float64(after.Flushes-before.Flushes)/float64(b.N), "fsyncs/op")
	b.ReportMetric(0, "ns/op")
}
