package redis_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley/parleytest"
	"parley/ratelimit"
	"parley/redis"
)

// loginNodes returns n LoginLimits that share rdb and prefix, as the nodes
// of one cluster do, each with its own fallback, all on clock c.
func loginNodes(rdb *goredis.Client, prefix string, c *parleytest.Clock, n int) []*redis.LoginLimit {
	var nodes []*redis.LoginLimit
	for range n {
		cfg := ratelimit.BackoffConfig{Free: 3, Base: time.Second, Max: time.Minute, Now: c.Now}
		nodes = append(nodes, redis.NewLoginLimit(redis.LoginConfig{
			Client: rdb, Prefix: prefix, Name: "name", Free: cfg.Free, Base: cfg.Base, Max: cfg.Max,
			Fallback: ratelimit.NewBackoff(cfg), Now: c.Now,
		}))
	}
	return nodes
}

// begin begins an attempt that must not wait for others in flight.
func begin(t *testing.T, l *redis.LoginLimit, key string) (func(bool), time.Duration) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	end, wait, err := l.Begin(ctx, key)
	if err != nil {
		t.Fatalf("Begin(%s) = %v", key, err)
	}
	return end, wait
}

// TestLoginLimitOneBudget: the failures of a name on two nodes sharing a
// Redis are counted together: one budget, not two.
func TestLoginLimitOneBudget(t *testing.T) {
	rdb, prefix := testClient(t)
	c := parleytest.NewClock()
	nodes := loginNodes(rdb, prefix, c, 2)
	a, b := nodes[0], nodes[1]
	for i, l := range []*redis.LoginLimit{a, b, a} { // the 3 free failures, over both nodes
		end, wait := begin(t, l, "alice")
		if end == nil {
			t.Fatalf("failure %d: Begin = a wait of %v, want it let through", i+1, wait)
		}
		end(true)
	}
	for name, l := range map[string]*redis.LoginLimit{"a": a, "b": b} {
		if end, wait := begin(t, l, "alice"); end != nil || wait != time.Second {
			t.Errorf("node %s after 3 failures over both: Begin = %v, %v; want a wait of 1s", name, end != nil, wait)
		}
	}
	if end, _ := begin(t, b, "bob"); end == nil {
		t.Errorf("another name waits too, want its own budget")
	} else {
		end(false)
	}
	c.Advance(time.Second)
	end, _ := begin(t, b, "alice")
	if end == nil {
		t.Fatal("the try after the wait was not let through")
	}
	end(true)
	if end, wait := begin(t, a, "alice"); end != nil || wait != 2*time.Second {
		t.Errorf("node a after the failed try on b: Begin = %v, %v; want a wait of 2s", end != nil, wait)
	}
	// A success's Reset on one node clears the name on all of them.
	a.Reset("alice")
	if end, _ := begin(t, b, "alice"); end == nil {
		t.Errorf("node b after a reset on a: a wait, want the name cleared")
	} else {
		end(false)
	}
}

// TestLoginLimitParallel: parallel attempts spread over two nodes get the
// free failures checked and no more; right passwords, many at once, all
// get through.
func TestLoginLimitParallel(t *testing.T) {
	rdb, prefix := testClient(t)
	c := parleytest.NewClock()
	nodes := loginNodes(rdb, prefix, c, 2)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	ends := make(chan func(bool), 16)
	var refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			end, wait, err := nodes[i%2].Begin(ctx, "alice")
			switch {
			case end != nil:
				ends <- end
			case err != nil || wait != time.Second:
				t.Errorf("Begin = a wait of %v, %v; want 1s", wait, err)
			default:
				refused.Add(1)
			}
		}()
	}
	for range 3 {
		(<-ends)(true)
	}
	wg.Wait()
	close(ends)
	if n := len(ends); n > 0 || refused.Load() != 13 {
		t.Errorf("16 guesses over 2 nodes: %d more let through than the 3 free, %d refused; want 0 and 13", n, refused.Load())
	}

	var inFlight, most atomic.Int64
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			end, wait, err := nodes[i%2].Begin(ctx, "bob")
			if end == nil {
				t.Errorf("a right password = a wait of %v, %v; want it let through", wait, err)
				return
			}
			n := inFlight.Add(1)
			for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
			}
			inFlight.Add(-1)
			end(false)
		}()
	}
	wg.Wait()
	if n := most.Load(); n > 3 {
		t.Errorf("%d attempts of one name in flight at once over the cluster, want at most 3", n)
	}
}

// TestLoginLimitRedisDown: with Redis unreachable the limit answers from
// the node's own counts: the failures still wait, nothing errs.
func TestLoginLimitRedisDown(t *testing.T) {
	rdb, err := redis.NewClient("redis://127.0.0.1:1/0") // nothing listens on port 1
	if err != nil {
		t.Fatal(err)
	}
	defer rdb.Close()
	l := loginNodes(rdb, "parleytest:down:", parleytest.NewClock(), 1)[0]
	for i := range 3 {
		end, wait := begin(t, l, "alice")
		if end == nil {
			t.Fatalf("failure %d with Redis down: a wait of %v, want it let through", i+1, wait)
		}
		end(true)
	}
	if end, wait := begin(t, l, "alice"); end != nil || wait != time.Second {
		t.Errorf("Begin after 3 failures with Redis down = %v, %v; want the node's own wait of 1s", end != nil, wait)
	}
}

// TestLoginLimitBusy: an attempt with no room, because of attempts in
// flight on another node, waits for them until its context is done and
// then reserves nothing.
func TestLoginLimitBusy(t *testing.T) {
	rdb, prefix := testClient(t)
	nodes := loginNodes(rdb, prefix, parleytest.NewClock(), 2)
	var held []func(bool)
	for range 3 {
		end, _ := begin(t, nodes[0], "alice")
		if end == nil {
			t.Fatal("a free attempt was not let through")
		}
		held = append(held, end)
	}
	// The three held attempts never end while it waits: the outcome does
	// not depend on how long the deadline is.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if end, wait, err := nodes[1].Begin(ctx, "alice"); end != nil || wait != 0 || err == nil {
		t.Errorf("Begin on b with 3 in flight on a = %v, %v, %v; want no reservation, no wait, an error", end != nil, wait, err)
	}
	for _, end := range held {
		end(false)
	}
	if end, _ := begin(t, nodes[1], "alice"); end == nil {
		t.Errorf("Begin on b once a's attempts succeeded = a wait, want it let through")
	} else {
		end(false)
	}
}
