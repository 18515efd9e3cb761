package redis_test

import (
	"testing"
	"time"

	"parley/redis"
)

// TestPresenceSeen checks the cluster's online and last-seen answers: a
// user is online while any node holds a session, and their last close is
// remembered for every node to read.
func TestPresenceSeen(t *testing.T) {
	rdb, prefix := testClient(t)
	a := redis.NewPresence(redis.PresenceConfig{Client: rdb, Prefix: prefix, Node: "a", TTL: 3 * time.Second})
	defer a.Close()
	b := redis.NewPresence(redis.PresenceConfig{Client: rdb, Prefix: prefix, Node: "b", TTL: 3 * time.Second})
	defer b.Close()
	ctx := t.Context()
	seen, err := b.Seen(ctx, []string{"alice", "bob"})
	if err != nil || seen["alice"].Online || !seen["alice"].LastSeenAt.IsZero() || len(seen) != 2 {
		t.Fatalf("before any session: %v, %v", seen, err)
	}
	before := time.Now().Add(-time.Second)
	if err := a.Add(ctx, "alice"); err != nil {
		t.Fatal(err)
	}
	a.Add(ctx, "alice")
	if seen, err = b.Seen(ctx, []string{"alice"}); err != nil || !seen["alice"].Online {
		t.Fatalf("with a session on a: %v, %v", seen, err)
	}
	a.Remove(ctx, "alice") // one of two: still online, nothing written
	if seen, err = b.Seen(ctx, []string{"alice"}); err != nil || !seen["alice"].Online || !seen["alice"].LastSeenAt.IsZero() {
		t.Fatalf("with one session left: %v, %v", seen, err)
	}
	a.Remove(ctx, "alice")
	seen, err = b.Seen(ctx, []string{"alice"})
	if err != nil || seen["alice"].Online || seen["alice"].LastSeenAt.Before(before) || seen["alice"].LastSeenAt.After(time.Now().Add(time.Second)) {
		t.Fatalf("after the last close: %v, %v", seen, err)
	}
}
