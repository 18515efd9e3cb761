package redis_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"parley"
	"parley/parleytest"
	"parley/postgres/pgtest"
	"parley/redis"
)

// waitGauge waits, at most d, until the gauge name of reg is want.
func waitGauge(t *testing.T, reg *prometheus.Registry, name string, want float64, d time.Duration) {
	t.Helper()
	parleytest.Eventually(t, d, func() bool {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name && mf.GetMetric()[0].GetGauge().GetValue() == want {
				return true
			}
		}
		return false
	}, "%s did not reach %v in %v", name, want, d)
}

// TestHealthCutsAHungRedis: once Redis stops answering (SIGSTOP: its
// sockets stay open), the breaker marks it down, a call already waiting
// on it ends although its own deadlines are a minute away, new calls
// fail at once with ErrDown, and when Redis answers again the recovery
// step runs, alone let through, before every call is.
func TestHealthCutsAHungRedis(t *testing.T) {
	srv, _ := privateClient(t)
	opt, err := goredis.ParseURL(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	opt.ReadTimeout, opt.WriteTimeout = time.Minute, time.Minute // only the cut ends a hung call
	opt.MaxRetries = -1
	rdb := goredis.NewClient(opt)
	defer rdb.Close()
	reg := prometheus.NewRegistry()
	h := redis.NewHealth(rdb, redis.HealthConfig{Interval: 50 * time.Millisecond, Timeout: 500 * time.Millisecond, Registerer: reg})
	defer h.Close()
	type stepRun struct{ own, other error }
	steps := make(chan stepRun, 10)
	h.OnRecover(func(ctx context.Context) error {
		steps <- stepRun{own: rdb.Ping(ctx).Err(), other: rdb.Ping(context.Background()).Err()}
		return nil
	})
	ctx := context.Background()
	if err := rdb.Set(ctx, "parleytest:health:"+parley.NewID(), "1", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}

	srv.Freeze()
	defer srv.Thaw() // no-op once thawed below
	hung := make(chan error, 1)
	go func() {
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		hung <- rdb.Ping(cctx).Err()
	}()
	select {
	case <-h.Down():
	case <-time.After(30 * time.Second):
		t.Fatal("Redis frozen 30 s and not marked down")
	}
	select {
	case err := <-hung:
		if err == nil {
			t.Error("a call hung on a frozen Redis succeeded")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a call hung on a frozen Redis did not end 30 s after Redis was marked down: not cut")
	}
	if err := rdb.Get(ctx, "x").Err(); !errors.Is(err, redis.ErrDown) {
		t.Errorf("Get while Redis is down: %v, want ErrDown", err)
	}
	if _, err := rdb.Pipelined(ctx, func(p goredis.Pipeliner) error { p.Get(ctx, "x"); return nil }); !errors.Is(err, redis.ErrDown) {
		t.Errorf("a pipeline while Redis is down: %v, want ErrDown", err)
	}
	if h.Up() {
		t.Error("Up() while down")
	}

	srv.Thaw()
	waitGauge(t, reg, "parley_redis_up", 1, 30*time.Second)
	select {
	case run := <-steps:
		if run.own != nil {
			t.Errorf("the recovery step's own call: %v, want it through", run.own)
		}
		if !errors.Is(run.other, redis.ErrDown) {
			t.Errorf("another call during the recovery: %v, want ErrDown (Redis is not up before the recovery is done)", run.other)
		}
	default:
		t.Error("Redis marked up without its recovery step")
	}
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Errorf("Ping after Redis is back: %v", err)
	}
}

// TestHotStoreWhileRedisHangs: with the breaker, while Redis hangs a send
// and a leave return without waiting for it and a membership check is
// answered from the store; once Redis answers again, the membership the
// leave changed during the freeze is not served stale from Redis.
func TestHotStoreWhileRedisHangs(t *testing.T) {
	srv, rdb := privateClient(t)
	reg := prometheus.NewRegistry()
	cfg := redis.HotConfig{Prefix: "parleytest:" + parley.NewID()[:8] + ":", Timeout: time.Minute, Registerer: reg,
		Health: &redis.HealthConfig{Interval: 50 * time.Millisecond, Timeout: 500 * time.Millisecond, Registerer: reg}}
	n := openNodeWith(t, pgtest.Schema(t), rdb, cfg, nil)
	ctx := context.Background()
	ann := parleytest.MustCreateUser(t, n.hot, "ann")
	bob := parleytest.MustCreateUser(t, n.hot, "bob")
	r := parleytest.MustCreateRoom(t, n.hot, ann, "room", 0)
	if _, _, err := n.hot.Join(ctx, r.ID, bob.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := n.hot.Member(ctx, r.ID, bob.ID); err != nil { // bob's memberships in Redis now
		t.Fatal(err)
	}

	srv.Freeze()
	defer srv.Thaw() // no-op once thawed below
	waitGauge(t, reg, "parley_redis_up", 0, 30*time.Second)
	done := make(chan error, 2)
	go func() {
		_, _, err := n.hot.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: ann.ID, SenderName: "ann", Body: "frozen"})
		done <- err
	}()
	go func() {
		_, err := n.hot.Leave(ctx, r.ID, bob.ID)
		done <- err
	}()
	for range 2 {
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("a write while Redis hangs: %v", err)
			}
		case <-time.After(30 * time.Second): // the hot store's Timeout is a minute
			t.Fatal("a write waited 30 s for a Redis marked down")
		}
	}
	if _, err := n.hot.Member(ctx, r.ID, bob.ID); parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("Member of bob after his leave, Redis down: %v, want not found (from the store)", err)
	}

	srv.Thaw()
	waitGauge(t, reg, "parley_redis_up", 1, 30*time.Second)
	if m, err := n.hot.Member(ctx, r.ID, bob.ID); parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("Member of bob as soon as Redis is back: %+v, %v, want not found (his leave's invalidation was lost in the freeze)", m, err)
	}
	msgs := mustMessages(t, n.hot, r.ID, parley.Newest(10))
	if len(msgs) != 1 || msgs[0].Body != "frozen" {
		t.Errorf("the newest page after Redis is back: %+v, want the message sent while it hung", msgs)
	}
}
