package redis_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley"
	"parley/redis"
)

// nopStore is the hot data's inner store for TestScalingRedis, which only
// writes commits: nothing reads through it.
type nopStore struct{ parley.Store }

func (nopStore) Close() error { return nil }

// redisCPU returns used_cpu_sys + used_cpu_user of the server.
func redisCPU(rdb *goredis.Client) time.Duration {
	var total float64
	for _, l := range strings.Split(rdb.Info(context.Background(), "cpu").Val(), "\r\n") {
		var v float64
		if _, err := fmt.Sscanf(l, "used_cpu_sys:%f", &v); err == nil {
			total += v
		} else if _, err := fmt.Sscanf(l, "used_cpu_user:%f", &v); err == nil {
			total += v
		}
	}
	return time.Duration(total * 1e9)
}

func quantileD(d []time.Duration, q float64) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// TestScalingRedis measures, for SCALING.md, the round trips a commit
// makes to Redis in cluster mode, one at a time: a PING, the hot data's
// write of a commit of one message (HotStore.Apply then Await: the RECEIPT
// and the publish wait for it) and a head's ZADD GT (Heads.Advance); then
// the server's CPU a message when one write carries 64 commits of 64
// rooms. Five rounds of 2,000 each. It asserts nothing and runs only when
// PARLEY_SCALING_REDIS names a Redis (host:port) of its own:
//
//	PARLEY_SCALING_REDIS=127.0.0.1:56379 go test -count=1 -run TestScalingRedis -v ./redis/
func TestScalingRedis(t *testing.T) {
	addr := os.Getenv("PARLEY_SCALING_REDIS")
	if addr == "" {
		t.Skip("PARLEY_SCALING_REDIS is not set: a measurement for SCALING.md")
	}
	rdb := goredis.NewClient(&goredis.Options{Addr: addr})
	ctx := context.Background()
	prefix := "parleyscaling:" + parley.NewID()[:8] + ":"
	hot := redis.NewHotStore(nopStore{}, rdb, redis.HotConfig{Prefix: prefix})
	t.Cleanup(func() {
		hot.Close()
		DeletePrefix(t, rdb, prefix)
		rdb.Close()
	})
	heads := redis.NewHeads(rdb, prefix)
	body := strings.Repeat("x", 60)
	seq := int64(0)
	message := func(room string, seq int64) parley.Event {
		now := time.Now()
		return parley.Event{Kind: parley.EventMessage, Room: parley.Room{ID: room, LastSeq: seq, LastActivityAt: now},
			Message: parley.Message{ID: parley.NewID(), RoomID: room, Seq: seq, SenderID: "u-" + room, SenderName: "ann", Body: body, SentAt: now}}
	}
	const n = 2000
	for round := 1; round <= 5; round++ {
		var ping, write, head, batch []time.Duration
		s0 := redisCPU(rdb)
		for range n {
			t0 := time.Now()
			rdb.Ping(ctx)
			ping = append(ping, time.Since(t0))
		}
		s1 := redisCPU(rdb)
		for range n {
			seq++
			ev := message("r1", seq)
			t0 := time.Now()
			hot.Apply([]parley.Event{ev})
			hot.Await(ctx, hot.Mark())
			write = append(write, time.Since(t0))
		}
		s2 := redisCPU(rdb)
		for range n {
			t0 := time.Now()
			if err := heads.Advance(ctx, map[string]int64{"r1": seq}); err != nil {
				t.Fatal(err)
			}
			head = append(head, time.Since(t0))
		}
		s3 := redisCPU(rdb)
		const rooms = 64
		for range n / rooms * 4 {
			seq++
			evs := make([]parley.Event, rooms)
			for i := range evs {
				evs[i] = message(fmt.Sprintf("b%d", i), seq)
			}
			t0 := time.Now()
			hot.Apply(evs)
			hot.Await(ctx, hot.Mark())
			batch = append(batch, time.Since(t0))
		}
		s4 := redisCPU(rdb)
		fmt.Printf("round %d: PING p50 %v p99 %v (server %v) | hot write of a commit p50 %v p99 %v (server %v) | head p50 %v p99 %v (server %v) | %d commits in one write p50 %v (server %v a message)\n",
			round, quantileD(ping, .5), quantileD(ping, .99), (s1-s0)/n, quantileD(write, .5), quantileD(write, .99), (s2-s1)/n,
			quantileD(head, .5), quantileD(head, .99), (s3-s2)/n, rooms, quantileD(batch, .5), (s4-s3)/time.Duration(len(batch)*rooms))
	}
}
