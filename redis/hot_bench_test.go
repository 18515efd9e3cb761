package redis_test

import (
	"context"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
	"parley/redis"
	"parley/servicetest"
)

// BenchmarkHotSendSlowRedis: 32 concurrent senders of one node, in 8
// rooms, through the hot store, while each write of the hot data (its
// Lua scripts) reaches Redis 2 ms late, as from a Redis a little further
// away or busy. It reports sends/s:
//
//	PARLEY_TEST_POSTGRES=… PARLEY_TEST_REDIS=… go test -run - -bench HotSendSlowRedis -benchtime 400x ./redis/
func BenchmarkHotSendSlowRedis(b *testing.B) {
	raw := os.Getenv("PARLEY_TEST_REDIS")
	if raw == "" {
		b.Skip("PARLEY_TEST_REDIS is not set")
	}
	u, err := url.Parse(raw)
	if err != nil {
		b.Fatal(err)
	}
	proxy := servicetest.NewProxy(b, u.Host)
	u.Host = proxy.Addr()
	rdb := deadlineClient(b, u.String())
	prefix := "parleybench:" + parley.NewID()[:8] + ":"
	b.Cleanup(func() { DeletePrefix(b, rdb, prefix) }) // after the node's Close
	hot := openNodeWith(b, pgtest.Schema(b), rdb, redis.HotConfig{Prefix: prefix}, nil).hot
	ann := parleytest.MustCreateUser(b, hot, "ann")
	var rooms []parley.Room
	for range 8 {
		rooms = append(rooms, parleytest.MustCreateRoom(b, hot, ann, "room", 0))
	}
	proxy.SetDelay(2*time.Millisecond, []byte("eval"))
	var next atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			r := rooms[next.Add(1)%int64(len(rooms))]
			if _, _, err := hot.Send(context.Background(), parley.NewMessage{RoomID: r.ID, SenderID: ann.ID, SenderName: "ann", Body: "x"}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "sends/s")
}

// BenchmarkHotEditAnnounced: 32 concurrent editors of one node, each
// editing a message of its own in one of 8 rooms, through the hot store,
// without a node id (node=none: one node, nothing announced) and with
// one (node=set: cluster mode, where each batch of changes is announced
// in Redis before it runs: HotStore.Intend, on PostgreSQL's writer). It
// reports edits/s; the ratio of the two in one run is the announcement's
// cost:
//
//	PARLEY_TEST_POSTGRES=… PARLEY_TEST_REDIS=… go test -run - -bench HotEditAnnounced -benchtime 4000x ./redis/
func BenchmarkHotEditAnnounced(b *testing.B) {
	for _, node := range []string{"", "bench-node"} {
		name := "node=none"
		if node != "" {
			name = "node=set"
		}
		b.Run(name, func(b *testing.B) { benchmarkHotEdit(b, node) })
	}
}

func benchmarkHotEdit(b *testing.B, node string) {
	raw := os.Getenv("PARLEY_TEST_REDIS")
	if raw == "" {
		b.Skip("PARLEY_TEST_REDIS is not set")
	}
	rdb := deadlineClient(b, raw)
	prefix := "parleybench:" + parley.NewID()[:8] + ":"
	b.Cleanup(func() { DeletePrefix(b, rdb, prefix) }) // after the node's Close
	var hot *redis.HotStore
	ready := make(chan struct{})
	cfg := postgres.Config{URL: pgtest.Schema(b), OnCommit: func(evs []parley.Event) { <-ready; hot.Apply(evs) }}
	if node != "" {
		cfg.BeforeChanges = func(rooms map[string]int) func(bool) { <-ready; return hot.Intend(rooms) }
	}
	pg, err := postgres.Open(context.Background(), cfg)
	if err != nil {
		b.Fatal(err)
	}
	hot = redis.NewHotStore(pg, rdb, redis.HotConfig{Prefix: prefix, Node: node})
	close(ready)
	b.Cleanup(func() { hot.Close() })
	const editors = 32
	users := parleytest.MustCreateUsers(b, hot, "editor", editors)
	var rooms []parley.Room
	for i := range 8 {
		rooms = append(rooms, parleytest.MustCreateRoom(b, hot, users[i], "room", 0))
	}
	msgs := make([]parley.Message, editors)
	for i, u := range users {
		r := rooms[i%len(rooms)]
		if i >= len(rooms) {
			parleytest.MustJoin(b, hot, r, u)
		}
		msgs[i] = parleytest.MustSend(b, hot, r, u, "first")
	}
	var next atomic.Int64
	b.SetParallelism((editors + runtime.GOMAXPROCS(0) - 1) / runtime.GOMAXPROCS(0))
	b.ResetTimer()
	start := time.Now()
	b.RunParallel(func(pb *testing.PB) {
		i := int(next.Add(1)-1) % editors // each goroutine its own message
		m, u := msgs[i], users[i]
		for n := 0; pb.Next(); n++ {
			if _, err := hot.EditMessage(context.Background(), parley.Edit{RoomID: m.RoomID, Seq: m.Seq, EditorID: u.ID, Body: strconv.Itoa(n)}); err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "edits/s")
}
