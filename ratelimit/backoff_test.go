package ratelimit

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// step is one move of a Backoff script: advance the clock, then act on
// the key "k" and check what Begin answers.
type step struct {
	advance time.Duration
	op      string        // "fail": an attempt that fails; "ok": one that succeeds; "reset"
	want    time.Duration // for fail and ok: 0 if the attempt is let through, else the wait it is refused with
}

func TestBackoff(t *testing.T) {
	cfg := BackoffConfig{Free: 3, Base: time.Second, Max: 10 * time.Second}
	fails := func(n int) []step {
		s := make([]step, n)
		for i := range s {
			s[i] = step{op: "fail"}
		}
		return s
	}
	cat := func(parts ...[]step) (out []step) {
		for _, p := range parts {
			out = append(out, p...)
		}
		return out
	}
	for _, tt := range []struct {
		name  string
		cfg   BackoffConfig
		steps []step
	}{
		{"free failures are let through", cfg, fails(3)},
		{"then a wait of Base", cfg, cat(fails(3), []step{{op: "fail", want: time.Second}})},
		{"the wait shrinks as time passes", cfg, cat(fails(3), []step{{advance: 400 * time.Millisecond, op: "fail", want: 600 * time.Millisecond}})},
		{"each failure after doubles the wait", cfg, cat(fails(3), []step{
			{advance: time.Second, op: "fail"}, {op: "fail", want: 2 * time.Second},
			{advance: 2 * time.Second, op: "fail"}, {op: "fail", want: 4 * time.Second},
			{advance: 4 * time.Second, op: "fail"}, {op: "fail", want: 8 * time.Second},
		})},
		{"the wait is capped", cfg, cat(fails(3), []step{
			{advance: time.Second, op: "fail"}, {advance: 2 * time.Second, op: "fail"},
			{advance: 4 * time.Second, op: "fail"}, {advance: 8 * time.Second, op: "fail"},
			{op: "fail", want: 10 * time.Second},
			{advance: 10 * time.Second, op: "fail"}, {op: "fail", want: 10 * time.Second},
		})},
		{"a refused attempt does not lengthen the wait", cfg, cat(fails(3), []step{
			{op: "fail", want: time.Second}, {op: "fail", want: time.Second},
			{advance: time.Second, op: "fail"},
		})},
		{"a success takes back its own count only", cfg, cat(fails(2), []step{
			{op: "ok"}, {op: "fail"}, {op: "fail", want: time.Second},
		})},
		{"a success after a wait starts no new one", cfg, cat(fails(3), []step{
			{advance: time.Second, op: "ok"}, {op: "fail"}, {op: "fail", want: 2 * time.Second},
		})},
		{"a reset forgets every failure", cfg, cat(fails(3), []step{{op: "reset"}}, fails(3))},
		{"one failure is forgiven per Decay", cfg, cat(fails(3), []step{
			{advance: 10 * time.Second, op: "fail"}, // 3 - 1 forgiven + 1 = 3 failures
			{op: "fail", want: time.Second},
		})},
		{"a quiet key comes back to every free failure", cfg, cat(fails(3), []step{
			{advance: 30 * time.Second, op: "fail"}, {op: "fail"}, {op: "fail"}, {op: "fail", want: time.Second},
		})},
		{"a huge count does not overflow the wait", BackoffConfig{Free: 1, Base: time.Hour, Max: 1 << 62}, cat(
			fails(1), []step{{op: "fail", want: time.Hour}},
		)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			cfg := tt.cfg
			cfg.Now = c.Now
			b := NewBackoff(cfg)
			for i, s := range tt.steps {
				c.Advance(s.advance)
				switch s.op {
				case "reset":
					b.Reset("k")
					continue
				}
				end, wait := mustBegin(t, b, "k")
				if ok := end != nil; s.want == 0 && !ok || s.want != 0 && (ok || wait != s.want) {
					t.Fatalf("step %d (%s after %v): Begin = %v, %v; want %v, %v", i, s.op, s.advance, ok, wait, s.want == 0, s.want)
				}
				if end != nil {
					end(s.op == "fail")
				}
			}
		})
	}
}

func TestBackoffKeysAreIndependent(t *testing.T) {
	b := NewBackoff(BackoffConfig{Free: 1, Now: newClock().Now})
	mustFail(t, b, "a")
	if end, _ := mustBegin(t, b, "a"); end != nil {
		t.Errorf("Begin(a) after its free failure let it through, want a wait")
	}
	if end, _ := mustBegin(t, b, "b"); end == nil {
		t.Errorf("Begin(b) = a wait, want it let through: a's failures are a's")
	}
}

// TestBackoffConcurrent: attempts that all begin before any outcome is
// known still get no more than the free ones; the others wait for them
// until their deadline (here: once the free ones are in).
func TestBackoffConcurrent(t *testing.T) {
	b := NewBackoff(BackoffConfig{Free: 5, Now: newClock().Now})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			end, _, err := b.Begin(ctx, "k")
			if end != nil && allowed.Add(1) == 5 {
				cancel()
			}
			if end == nil && err == nil {
				t.Errorf("Begin refused a key with no failure")
			}
		}()
	}
	wg.Wait()
	if got := allowed.Load(); got != 5 {
		t.Errorf("100 concurrent attempts: %d let through, want 5", got)
	}
}

func TestBackoffForgets(t *testing.T) {
	c := newClock()
	b := NewBackoff(BackoffConfig{Free: 3, Base: time.Second, Max: time.Minute, Now: c.Now})
	for i := range 1000 {
		for range 3 {
			mustFail(t, b, fmt.Sprint("key", i))
		}
	}
	if got := b.Len(); got != 1000 {
		t.Fatalf("Len() = %d after 1000 failing keys, want 1000", got)
	}
	c.Advance(2 * time.Minute) // 2 of 3 failures forgiven
	b.sweepAll()
	if got := b.Len(); got != 1000 {
		t.Errorf("Len() = %d with a failure left to forgive, want 1000", got)
	}
	c.Advance(time.Minute)
	b.sweepAll()
	if got := b.Len(); got != 0 {
		t.Errorf("Len() = %d once every failure is forgiven, want 0", got)
	}
	if end, _ := mustBegin(t, b, "key1"); end == nil {
		t.Errorf("Begin(key1) after it was forgotten = a wait, want it let through")
	}
}

// TestBackoffSweepKeepsWaits: a key whose failures are forgiven but whose
// wait is not over is kept (a Decay shorter than the wait).
func TestBackoffSweepKeepsWaits(t *testing.T) {
	c := newClock()
	b := NewBackoff(BackoffConfig{Free: 1, Base: time.Hour, Max: time.Hour, Decay: time.Second, Now: c.Now})
	mustFail(t, b, "k")
	c.Advance(time.Minute)
	b.sweepAll()
	if end, wait := mustBegin(t, b, "k"); end != nil || wait != 59*time.Minute {
		t.Errorf("Begin(k) a minute into an hour's wait = %v, %v; want a wait of 59m", end != nil, wait)
	}
}

func (b *Backoff) sweepAll() {
	now := int64(b.now().Sub(b.start))
	for i := range b.shards {
		s := &b.shards[i]
		s.mu.Lock()
		b.sweepLocked(s, now)
		s.mu.Unlock()
	}
}

// mustBegin begins an attempt of key that must not wait for others in
// flight (there are none in these tests): it returns its end, or nil and
// the wait it was refused with.
func mustBegin(t *testing.T, b *Backoff, key string) (func(failed bool), time.Duration) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // nothing is in flight: Begin decides without waiting
	end, wait, err := b.Begin(ctx, key)
	if err != nil {
		t.Fatalf("Begin(%s) = %v with nothing in flight", key, err)
	}
	return end, wait
}

// mustFail counts a failed attempt of key, which must be let through.
func mustFail(t *testing.T, b *Backoff, key string) {
	t.Helper()
	end, wait := mustBegin(t, b, key)
	if end == nil {
		t.Fatalf("Begin(%s) = a wait of %v, want it let through", key, wait)
	}
	end(true)
}
