package redis_test

import (
	"context"
	"os"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley"
	"parley/parleytest"
	"parley/redis"
)

// testClient returns a client for PARLEY_TEST_REDIS and a key prefix of
// its own under PARLEY_TEST_REDIS_PREFIX, whose keys it deletes at the end;
// it skips the test when PARLEY_TEST_REDIS is not set.
func testClient(t testing.TB) (*goredis.Client, string) {
	t.Helper()
	url := os.Getenv("PARLEY_TEST_REDIS")
	if url == "" {
		t.Skip("PARLEY_TEST_REDIS is not set: set it to a Redis URL (redis://127.0.0.1:6379/0) to run the Redis tests")
	}
	rdb, err := redis.NewClient(url)
	if err != nil {
		t.Fatal(err)
	}
	prefix := os.Getenv("PARLEY_TEST_REDIS_PREFIX")
	if prefix == "" {
		prefix = "parleytest:"
	}
	prefix += parley.NewID()[:8] + ":"
	t.Cleanup(func() {
		DeletePrefix(t, rdb, prefix)
		rdb.Close()
	})
	return rdb, prefix
}

// DeletePrefix deletes every key under prefix: the only way these tests
// ever clear Redis.
func DeletePrefix(t testing.TB, rdb *goredis.Client, prefix string) {
	t.Helper()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var keys []string
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if len(keys) > 0 {
		rdb.Del(ctx, keys...)
	}
}

func TestPresence(t *testing.T) {
	parleytest.RunPresenceTests(t, func(t *testing.T, ttl time.Duration) parleytest.NewPresenceFunc {
		rdb, prefix := testClient(t)
		return func(node string, hook parley.PresenceHook) parley.Presence {
			p := redis.NewPresence(redis.PresenceConfig{Client: rdb, Prefix: prefix, Node: node, TTL: ttl, OnChange: hook})
			t.Cleanup(func() { p.Close() })
			return p
		}
	})
}

// TestPresenceFlushed: after the keys are deleted (Redis flushed), the
// heartbeat restores the entries within one heartbeat and tells the other
// nodes that everything changed.
func TestPresenceFlushed(t *testing.T) {
	rdb, prefix := testClient(t)
	const ttl = 900 * time.Millisecond
	changed := make(chan string, 100)
	a := redis.NewPresence(redis.PresenceConfig{Client: rdb, Prefix: prefix, Node: "a", TTL: ttl})
	b := redis.NewPresence(redis.PresenceConfig{Client: rdb, Prefix: prefix, Node: "b", TTL: ttl,
		OnChange: func(u string) { changed <- u }})
	t.Cleanup(func() { a.Close(); b.Close() })
	parleytest.MustAdd(t, a, "u1")
	// Wait for the add's own announcement: it comes after the "" of b's
	// subscription, so whatever b hears next is the restore's.
	for u := ""; u != "u1"; {
		select {
		case u = <-changed:
		case <-time.After(2 * time.Second):
			t.Fatal("the add of u1 was never announced")
		}
	}
	DeletePrefix(t, rdb, prefix)
	if got := parleytest.NodesOf(t, b, "u1"); len(got) != 0 {
		t.Fatalf("after the flush Nodes = %v, want none", got)
	}
	// The heartbeat (every ttl/3) restores the entries: poll for them.
	var got map[string]string
	if !parleytest.Poll(5*time.Second, func() bool { got = parleytest.NodesOf(t, b, "u1"); return got["u1"] == "[a]" }) {
		t.Fatalf("5 s (many heartbeats) after the flush Nodes = %v, want u1 on [a]", got)
	}
	select {
	case u := <-changed:
		if u != "" {
			t.Errorf("change hook heard %q, want \"\" (everything)", u)
		}
	case <-time.After(2 * time.Second):
		t.Errorf("no change announced after the restore")
	}
}

// TestPresenceResetHook: a node whose heartbeat finds its entries missing
// (Redis lost its data) tells its reset hook, so that its relay knows
// routes may be incomplete until every node has written its entries again.
func TestPresenceResetHook(t *testing.T) {
	rdb, prefix := testClient(t)
	reset := make(chan struct{}, 10)
	a := redis.NewPresence(redis.PresenceConfig{Client: rdb, Prefix: prefix, Node: "a", TTL: 900 * time.Millisecond,
		OnReset: func() { reset <- struct{}{} }})
	t.Cleanup(func() { a.Close() })
	parleytest.MustAdd(t, a, "u1")
	select {
	case <-reset:
		t.Fatal("reset hook called with nothing lost")
	default:
	}
	DeletePrefix(t, rdb, prefix)
	select {
	case <-reset:
	case <-time.After(5 * time.Second):
		t.Fatal("no reset told within 5 s of the entries' loss (the heartbeat runs every 300 ms)")
	}
}

// TestPresenceEmptyRedisIsAReset: a presence read from a Redis that lost
// its data (the epoch marker is gone) tells the reset hook before it
// returns, rather than answering "nobody online" as if that were sure; a
// read from a Redis whose marker is old tells nothing. The TTL is long,
// so that no heartbeat runs during the test: what tells is the read.
func TestPresenceEmptyRedisIsAReset(t *testing.T) {
	tests := []struct {
		name string
		read func(ctx context.Context, p *redis.Presence) error
	}{
		{"Nodes", func(ctx context.Context, p *redis.Presence) error {
			_, err := p.Nodes(ctx, []string{"u1"})
			return err
		}},
		{"LiveNodes", func(ctx context.Context, p *redis.Presence) error {
			_, err := p.LiveNodes(ctx)
			return err
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rdb, prefix := testClient(t)
			ctx := context.Background()
			// A cluster up for an hour: its marker is old.
			if err := rdb.Set(ctx, prefix+"presence:epoch", time.Now().Add(-time.Hour).UnixMilli(), 0).Err(); err != nil {
				t.Fatal(err)
			}
			var resets atomic.Int64
			a := redis.NewPresence(redis.PresenceConfig{Client: rdb, Prefix: prefix, Node: "a", TTL: time.Minute,
				OnReset: func() { resets.Add(1) }})
			t.Cleanup(func() { a.Close() })
			parleytest.MustAdd(t, a, "u1")
			if err := tc.read(ctx, a); err != nil {
				t.Fatal(err)
			}
			if n := resets.Load(); n != 0 {
				t.Fatalf("%s with an old marker told %d resets, want 0", tc.name, n)
			}
			DeletePrefix(t, rdb, prefix) // Redis restarted empty
			if err := tc.read(ctx, a); err != nil {
				t.Fatal(err)
			}
			if n := resets.Load(); n != 1 {
				t.Errorf("%s from an empty Redis told %d resets before it returned, want 1", tc.name, n)
			}
		})
	}
}
