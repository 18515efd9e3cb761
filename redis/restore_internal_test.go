package redis

import (
	"context"
	"os"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// TestRestoreAfterLastSession: an entry the heartbeat wrote back for a
// user whose last session ended meanwhile is removed again and not
// announced; one for a user with a session is kept and announced.
func TestRestoreAfterLastSession(t *testing.T) {
	url := os.Getenv("PARLEY_TEST_REDIS")
	if url == "" {
		t.Skip("PARLEY_TEST_REDIS is not set: set it to a Redis URL (redis://127.0.0.1:6379/0) to run the Redis tests")
	}
	rdb, err := NewClient(url)
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	prefix := os.Getenv("PARLEY_TEST_REDIS_PREFIX")
	if prefix == "" {
		prefix = "parleytest:"
	}
	prefix += parley.NewID()[:8] + ":"
	p := NewPresence(PresenceConfig{Client: rdb, Prefix: prefix, Node: "a", TTL: time.Minute})
	defer p.Close()
	ctx := context.Background()
	if err := p.Add(ctx, "open"); err != nil {
		t.Fatal(err)
	}
	// What the heartbeat writes for both users (it read its snapshot while
	// "gone" still had a session).
	if _, err := rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		p.queueRefresh(ctx, pipe, []string{"open", "gone"})
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !p.restore(ctx, "open") {
		t.Errorf("restore(open) = false, want true: the user has a session")
	}
	if p.restore(ctx, "gone") {
		t.Errorf("restore(gone) = true, want false: the user has no session")
	}
	got, err := p.Nodes(ctx, []string{"open", "gone"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || len(got["open"]) != 1 {
		t.Errorf("Nodes = %v, want only open on [a]", got)
	}
	rdb.Del(ctx, p.userKey("open"), p.userKey("gone"), p.nodeKey, p.nodesKey)
}
