package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley/parleytest"
	"parley/redis"
	"parley/servicetest"
)

func newConns(t *testing.T, rdb *goredis.Client, prefix, node string) *redis.Conns {
	c := redis.NewConns(redis.ConnsConfig{Client: rdb, Prefix: prefix, Node: node, TTL: time.Minute, Timeout: time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestConnsOverTheCluster: a user's connections on three nodes count
// against one limit; a release frees a place for the next connection.
func TestConnsOverTheCluster(t *testing.T) {
	rdb, prefix := testClient(t)
	ctx := context.Background()
	nodes := []*redis.Conns{newConns(t, rdb, prefix, "a"), newConns(t, rdb, prefix, "b"), newConns(t, rdb, prefix, "c")}
	for i, n := range nodes[:2] {
		if !n.Acquire(ctx, "alice", fmt.Sprint("s", i), 2) {
			t.Fatalf("node %d: Acquire of alice's connection %d = false, want true", i, i+1)
		}
	}
	if nodes[2].Acquire(ctx, "alice", "s2", 2) {
		t.Errorf("node c: Acquire of alice's third connection with a limit of 2 = true, want false")
	}
	if !nodes[2].Acquire(ctx, "bob", "s3", 2) {
		t.Errorf("bob's first connection refused")
	}
	// Released on a, the place is free on c at once; on a it is too,
	// even before the release reaches Redis in the background.
	nodes[0].Release("alice", "s0")
	if !nodes[0].Acquire(ctx, "alice", "s4", 2) {
		t.Errorf("Acquire on the node that released one = false, want true")
	}
	if nodes[2].Acquire(ctx, "alice", "s5", 2) {
		t.Errorf("Acquire over the limit again = true, want false")
	}
}

// TestConnsNodeClosed: Close removes a node's connections.
func TestConnsNodeClosed(t *testing.T) {
	rdb, prefix := testClient(t)
	ctx := context.Background()
	a := redis.NewConns(redis.ConnsConfig{Client: rdb, Prefix: prefix, Node: "a", Timeout: time.Second})
	b := newConns(t, rdb, prefix, "b")
	if !a.Acquire(ctx, "alice", "s1", 1) {
		t.Fatal("first connection refused")
	}
	if b.Acquire(ctx, "alice", "s2", 1) {
		t.Fatal("second connection over a limit of 1 allowed")
	}
	a.Close()
	if !b.Acquire(ctx, "alice", "s2", 1) {
		t.Errorf("Acquire after the other node closed = false, want true")
	}
}

// TestConnsRedisFrozen: with Redis frozen Acquire allows the connection
// (the per-node limit is then the only one) and, once Redis is back, the
// heartbeat writes it, so it counts again.
func TestConnsRedisFrozen(t *testing.T) {
	srv := servicetest.StartRedis(t)
	opt, err := goredis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	ctx := context.Background()
	a := redis.NewConns(redis.ConnsConfig{Client: rdb, Prefix: "t:", Node: "a", TTL: 600 * time.Millisecond})
	defer a.Close()
	b := redis.NewConns(redis.ConnsConfig{Client: rdb, Prefix: "t:", Node: "b", TTL: time.Minute})
	defer b.Close()
	srv.Freeze()
	if !a.Acquire(ctx, "alice", "s1", 1) {
		t.Errorf("Acquire with Redis frozen = false, want true (fails open to the per-node limit)")
	}
	srv.Thaw()
	// a's heartbeat (every 200 ms) writes s1 back: then b is refused.
	parleytest.Eventually(t, 10*time.Second, func() bool {
		if b.Acquire(ctx, "alice", "s2", 1) {
			b.Release("alice", "s2")
			return false
		}
		return true
	}, "the connection allowed while Redis was frozen never counted")
}
