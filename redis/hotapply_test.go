package redis_test

import (
	"context"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
	"parley/redis"
	"parley/servicetest"
)

// privateClient starts a redis-server of the test's own (which it may
// pause) and returns it with a client whose calls end at their context's
// deadline, as cmd/parley dials them.
func privateClient(t *testing.T) (*servicetest.Redis, *goredis.Client) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a private redis-server")
	}
	srv := servicetest.StartRedis(t)
	opt, err := goredis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return srv, rdb
}

// waitDone waits, at most d, for done to be closed.
func waitDone(done <-chan struct{}, d time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// TestHotApplyDoesNotHoldWriters: while Redis does not answer, a commit
// of the node hands its events to the hot data and goes on, so that the
// other writers of the node (which PostgreSQL's sequencer orders behind
// the commit callbacks) do not wait for Redis; the writer through the hot
// store waits for its own write (read-your-writes), and once Redis is
// back every write is there.
func TestHotApplyDoesNotHoldWriters(t *testing.T) {
	srv, rdb := privateClient(t)
	prefix := "parleytest:" + parley.NewID()[:8] + ":"
	var hot *redis.HotStore
	ready := make(chan struct{})
	applying := make(chan struct{}, 64) // a commit callback started
	pg, err := postgres.Open(context.Background(), postgres.Config{URL: pgtest.Schema(t), OnCommit: func(evs []parley.Event) {
		<-ready
		select {
		case applying <- struct{}{}:
		default:
		}
		hot.Apply(evs)
	}})
	if err != nil {
		t.Fatal(err)
	}
	// A Redis that does not answer holds a round trip this long.
	hot = redis.NewHotStore(pg, rdb, redis.HotConfig{Prefix: prefix, RecentMessages: 20, Timeout: time.Minute})
	close(ready)
	t.Cleanup(func() { hot.Close() })
	ann := parleytest.MustCreateUser(t, hot, "ann")
	one := parleytest.MustCreateRoom(t, hot, ann, "one", 0)
	two := parleytest.MustCreateRoom(t, hot, ann, "two", 0)
	mustMessages(t, hot, one.ID, parley.Newest(10)) // warm the windows
	mustMessages(t, hot, two.ID, parley.Newest(10))
	for len(applying) > 0 {
		<-applying
	}

	srv.Pause()
	resumed := false
	defer func() {
		if !resumed {
			srv.Resume()
		}
	}()
	first := make(chan struct{})
	go func() {
		defer close(first)
		if _, _, err := hot.Send(context.Background(), parley.NewMessage{RoomID: one.ID, SenderID: ann.ID, SenderName: "ann", Body: "first"}); err != nil {
			t.Errorf("Send(first) error = %v", err)
		}
	}()
	<-applying // the first send's commit reached the hot data
	second := make(chan struct{})
	go func() {
		defer close(second)
		if _, _, err := pg.Send(context.Background(), parley.NewMessage{RoomID: two.ID, SenderID: ann.ID, SenderName: "ann", Body: "second"}); err != nil {
			t.Errorf("Send(second) error = %v", err)
		}
	}()
	if !waitDone(second, 10*time.Second) {
		t.Fatal("a write of the node waited 10 s behind another commit's write to a Redis that does not answer")
	}
	select {
	case <-first:
		t.Error("Send returned before its commit was in Redis (Redis is paused)")
	default:
	}
	srv.Resume()
	resumed = true
	if !waitDone(first, 30*time.Second) {
		t.Fatal("Send did not return 30 s after Redis came back")
	}
	wantSeqs(t, "room one", mustMessages(t, hot, one.ID, parley.Newest(10)), 1, 1)
	wantSeqs(t, "room two", mustMessages(t, hot, two.ID, parley.Newest(10)), 1, 1)
}
