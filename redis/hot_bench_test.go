package redis_test

import (
	"context"
	"net/url"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
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
