package redis_test

import (
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley/parleytest"
	"parley/ratelimit"
	"parley/redis"
	"parley/servicetest"
)

// allowedOf counts the calls of key that l allows out of n.
func allowedOf(l *ratelimit.Shared, key string, n int) int {
	got := 0
	for range n {
		if ok, _ := l.Allow(key); ok {
			got++
		}
	}
	return got
}

// sharedNodes returns n limiters of rate and burst over the buckets of
// rdb, as n nodes have them.
func sharedNodes(rdb *goredis.Client, prefix string, n int, rate float64, burst int) []*ratelimit.Shared {
	var out []*ratelimit.Shared
	for range n {
		out = append(out, ratelimit.NewShared(ratelimit.SharedConfig{
			Rate: rate, Burst: burst, Source: redis.NewBuckets(rdb, prefix, "test"),
			Timeout: time.Second, // a loaded test machine's Redis must not pass for a hung one
		}))
	}
	return out
}

// TestBucketsOneBudget: three nodes' limiters on one Redis allow a key
// spread over them one burst, not three.
func TestBucketsOneBudget(t *testing.T) {
	rdb, prefix := testClient(t)
	// 1 token an hour: the test's own duration refills nothing.
	nodes := sharedNodes(rdb, prefix, 3, 1.0/3600, 20)
	total := 0
	for range 20 {
		for _, n := range nodes {
			total += allowedOf(n, "alice", 1)
		}
	}
	if total != 20 {
		t.Errorf("3 nodes allowed alice %d of 60 calls with a burst of 20, want 20", total)
	}
	for i, n := range nodes {
		if ok, wait := n.Allow("alice"); ok || wait < 59*time.Minute {
			t.Errorf("node %d: Allow past the budget = %v, %v; want false, about an hour", i, ok, wait)
		}
	}
	if got := allowedOf(nodes[1], "bob", 25); got != 20 {
		t.Errorf("bob allowed %d of 25, want his own 20", got)
	}
}

// TestBucketsRefill: the shared bucket refills at the rate, by Redis's
// clock.
func TestBucketsRefill(t *testing.T) {
	rdb, prefix := testClient(t)
	nodes := sharedNodes(rdb, prefix, 2, 50, 2) // 20 ms a token
	if got := allowedOf(nodes[0], "alice", 2) + allowedOf(nodes[1], "alice", 2); got != 2 {
		t.Fatalf("2 nodes allowed %d of a burst of 2, want 2", got)
	}
	ok, wait := nodes[1].Allow("alice")
	if ok || wait <= 0 || wait > 20*time.Millisecond {
		t.Fatalf("Allow past the burst = %v, %v; want false within 20 ms", ok, wait)
	}
	time.Sleep(wait) // the wait Redis named, not a guess
	parleytest.Eventually(t, 5*time.Second, func() bool { ok, _ := nodes[1].Allow("alice"); return ok },
		"no token 5 s after the wait Redis named")
}

// TestBucketsRedisUnreachable: with Redis's port closed, or Redis frozen,
// each node falls back to its own bucket: the limit holds per node, and
// nobody is refused for Redis's sake.
func TestBucketsRedisUnreachable(t *testing.T) {
	t.Run("closed port", func(t *testing.T) {
		rdb, err := redis.NewClient(fmt.Sprintf("redis://127.0.0.1:%d/0", servicetest.FreePort(t)))
		if err != nil {
			t.Fatal(err)
		}
		defer rdb.Close()
		nodes := sharedNodes(rdb, "parleytest:closed:", 2, 1.0/3600, 5)
		if got := allowedOf(nodes[0], "alice", 10) + allowedOf(nodes[1], "alice", 10); got != 10 {
			t.Errorf("2 nodes without Redis allowed %d, want 10 (5 each)", got)
		}
	})
	t.Run("frozen", func(t *testing.T) {
		srv := servicetest.StartRedis(t)
		opt, err := goredis.ParseURL(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		opt.ContextTimeoutEnabled = true // as cmd/parley dials it
		rdb := goredis.NewClient(opt)
		defer rdb.Close()
		nodes := ratelimit.NewShared(ratelimit.SharedConfig{
			Rate: 1.0 / 3600, Burst: 5, Lease: 1, Source: redis.NewBuckets(rdb, "t:", "test"),
		})
		if got := allowedOf(nodes, "alice", 2); got != 2 {
			t.Fatalf("allowed %d of 2 with Redis up, want 2", got)
		}
		srv.Freeze()
		defer srv.Thaw()
		// The node's own bucket is full: 5 more, then refused.
		if got := allowedOf(nodes, "alice", 10); got != 5 {
			t.Errorf("allowed %d of 10 with Redis frozen, want the node's own 5", got)
		}
	})
}
