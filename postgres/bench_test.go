package postgres_test

import (
	"context"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
)

// benchSenders is the number of concurrent senders of BenchmarkSendParallel:
// a batch holds at most the senders waiting while the one before commits,
// so throughput grows with them until MaxBatch or the database's CPU is
// the limit.
var benchSenders = 256

// benchMaxBatch is Config.MaxBatch of BenchmarkSendParallel; 0 for the
// default.
var benchMaxBatch int

// benchClientIDs gives every message of BenchmarkSendParallel a client id
// of its own (idempotency keys, as clients that send again use them).
var benchClientIDs bool

func init() {
	flag.IntVar(&benchSenders, "senders", benchSenders, "concurrent senders of BenchmarkSendParallel (rounded up to a multiple of GOMAXPROCS)")
	flag.BoolVar(&benchClientIDs, "client-ids", false, "give every message of BenchmarkSendParallel a client id")
	flag.IntVar(&benchMaxBatch, "max-batch", 0, "Config.MaxBatch of BenchmarkSendParallel (0: the store's default)")
}

// BenchmarkSendParallel measures durable sends (synchronous_commit as the
// server has it, on by default) with group commit: -senders concurrent
// senders (default 256) over 100 rooms, each message in its own Send. It
// reports messages and commits per second, the mean batch, the writer's
// time a batch and the CPU a message (cpuMeter), for the default single
// writer, two and four.
// BenchmarkSendParallel runs with the search vector (index=on, the store
// as it serves) and without (index=off, Config.NoSearchIndex), for one and
// two writers: what the search index costs each send (docs/perf-log.md).
func BenchmarkSendParallel(b *testing.B) {
	for _, index := range []string{"on", "off"} {
		for _, writers := range []int{1, 2, 4} {
			b.Run(fmt.Sprintf("index=%s/writers=%d", index, writers), func(b *testing.B) {
				benchmarkSendParallel(b, writers, index == "off")
			})
		}
	}
}

func benchmarkSendParallel(b *testing.B, writers int, noIndex bool) {
	const nRooms = 100
	url := pgtest.Schema(b)
	s := mustOpen(b, postgres.Config{URL: url, Writers: writers, NoSearchIndex: noIndex, MaxBatch: benchMaxBatch})
	ctx := context.Background()
	meter, err := pgxpool.New(ctx, url)
	if err != nil {
		b.Fatal(err)
	}
	defer meter.Close()
	users := parleytest.MustCreateUsers(b, s, "sender", nRooms)
	rooms := make([]parley.Room, nRooms)
	for i := range rooms {
		rooms[i] = parleytest.MustCreateRoom(b, s, users[i], fmt.Sprintf("room%d", i), 0)
	}
	var next atomic.Int64
	before := s.BatchStats()
	b.SetParallelism(max(1, (benchSenders+runtime.GOMAXPROCS(0)-1)/runtime.GOMAXPROCS(0)))
	cpu := startCPU(b, meter)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := next.Add(1)
			r, u := rooms[i%nRooms], users[i%nRooms]
			var clientID string
			if benchClientIDs {
				clientID = "c" + strconv.FormatInt(i, 10)
			}
			if _, _, err := s.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name,
				Body: "a message of some typical length, about sixty bytes long.", ClientID: clientID}); err != nil {
				b.Errorf("Send() error = %v", err)
				return
			}
		}
	})
	elapsed := time.Since(start).Seconds()
	b.StopTimer()
	after := s.BatchStats()
	batches := after.Batches - before.Batches
	b.ReportMetric(float64(b.N)/elapsed, "msgs/s")
	b.ReportMetric(float64(batches)/elapsed, "commits/s")
	if batches > 0 {
		b.ReportMetric(float64(after.Requests-before.Requests)/float64(batches), "msgs/commit")
		// The writer's time per batch, from taking it to the end of its
		// COMMIT: with one writer, commits/s × this is its busy share.
		b.ReportMetric(float64(after.CommitTime-before.CommitTime)/float64(batches)/1e3, "µs/commit")
	}
	cpu.report(b, b.N)
}
