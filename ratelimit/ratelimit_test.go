package ratelimit

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// clock is a fake time source that moves only when told.
type clock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// mustAllow takes n tokens from key, failing if any is refused.
func mustAllow(t *testing.T, l *Limiter, key string, n int) {
	t.Helper()
	for i := range n {
		if ok, wait := l.Allow(key); !ok {
			t.Fatalf("Allow(%q) call %d of %d = false (retry after %v), want true", key, i+1, n, wait)
		}
	}
}

func expectRefused(t *testing.T, l *Limiter, key string, wantWait time.Duration) {
	t.Helper()
	if ok, wait := l.Allow(key); ok || wait != wantWait {
		t.Errorf("Allow(%q) = %v, %v, want false, %v", key, ok, wait, wantWait)
	}
}

func TestBurstThenRate(t *testing.T) {
	c := newClock()
	l := New(Config{Rate: 2, Burst: 4, Now: c.Now})
	mustAllow(t, l, "alice", 4)
	expectRefused(t, l, "alice", 500*time.Millisecond)
	c.Advance(200 * time.Millisecond)
	expectRefused(t, l, "alice", 300*time.Millisecond)
	c.Advance(300 * time.Millisecond)
	mustAllow(t, l, "alice", 1)
	expectRefused(t, l, "alice", 500*time.Millisecond)
	// A long pause refills up to the burst, not beyond it.
	c.Advance(time.Hour)
	mustAllow(t, l, "alice", 4)
	expectRefused(t, l, "alice", 500*time.Millisecond)
}

// TestRefusalTakesNothing checks that hammering a refused key does not
// push its next token further away.
func TestRefusalTakesNothing(t *testing.T) {
	c := newClock()
	l := New(Config{Rate: 1, Burst: 1, Now: c.Now})
	mustAllow(t, l, "alice", 1)
	for range 100 {
		l.Allow("alice")
	}
	c.Advance(time.Second)
	mustAllow(t, l, "alice", 1)
}

func TestKeysAreIndependent(t *testing.T) {
	c := newClock()
	l := New(Config{Rate: 1, Burst: 3, Now: c.Now})
	mustAllow(t, l, "alice", 3)
	expectRefused(t, l, "alice", time.Second)
	mustAllow(t, l, "bob", 3)
}

func TestDefaultBurst(t *testing.T) {
	for _, tt := range []struct {
		name  string
		rate  float64
		burst int
	}{
		{"twice the rate", 20, 40},
		{"rounded up", 1.2, 3},
		{"at least one", 0.25, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newClock()
			l := New(Config{Rate: tt.rate, Now: c.Now})
			mustAllow(t, l, "k", tt.burst)
			if ok, _ := l.Allow("k"); ok {
				t.Errorf("New(Rate: %g) allowed %d calls at once, want %d", tt.rate, tt.burst+1, tt.burst)
			}
		})
	}
}

func TestNewPanicsWithoutRate(t *testing.T) {
	for _, rate := range []float64{0, -1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("New(Rate: %g) did not panic", rate)
				}
			}()
			New(Config{Rate: rate})
		}()
	}
}

// TestForgetsIdleKeys checks that the entries of keys that have been quiet
// for a fill time go, while active keys stay, and that a forgotten key
// comes back with a full bucket, as if it had been kept.
func TestForgetsIdleKeys(t *testing.T) {
	c := newClock()
	l := New(Config{Rate: 10, Burst: 20, Now: c.Now}) // fills in 2 s
	const n = 20000
	for i := range n {
		mustAllow(t, l, fmt.Sprintf("old%d", i), 1)
	}
	mustAllow(t, l, "alice", 20)
	if got := l.Len(); got != n+1 {
		t.Fatalf("Len() = %d after %d keys, want %d", got, n+1, n+1)
	}
	c.Advance(2 * time.Second)
	// Fresh keys reach every shard, and each sweeps on its first call.
	for i := range n {
		mustAllow(t, l, fmt.Sprintf("new%d", i), 1)
	}
	if got := l.Len(); got != n {
		t.Errorf("Len() = %d after the first keys went idle, want %d (only the new keys)", got, n)
	}
	mustAllow(t, l, "alice", 20)
	expectRefused(t, l, "alice", 100*time.Millisecond)
}

// TestSweepKeepsFillingBuckets checks that a sweep forgets only buckets
// that are full again: forgetting must never hand out extra tokens.
func TestSweepKeepsFillingBuckets(t *testing.T) {
	c := newClock()
	l := New(Config{Rate: 10, Burst: 20, Now: c.Now})
	mustAllow(t, l, "alice", 20)
	c.Advance(2*time.Second - time.Millisecond)
	l.sweepAll()
	if got := l.Len(); got != 1 {
		t.Fatalf("Len() = %d after a sweep just before alice's bucket is full, want 1", got)
	}
	mustAllow(t, l, "alice", 19)
	if ok, _ := l.Allow("alice"); ok {
		t.Errorf("alice got a 20th token 1 ms before her bucket refilled")
	}
	c.Advance(2 * time.Second)
	l.sweepAll()
	if got := l.Len(); got != 0 {
		t.Errorf("Len() = %d after a sweep with every bucket full, want 0", got)
	}
}

// TestSweepShrinks checks that a shard's map is remade once most of its
// keys are gone, so memory follows the active keys, not the peak.
func TestSweepShrinks(t *testing.T) {
	c := newClock()
	l := New(Config{Rate: 10, Burst: 20, Now: c.Now})
	for i := range 100000 {
		mustAllow(t, l, fmt.Sprintf("k%d", i), 1)
	}
	c.Advance(2 * time.Second)
	mustAllow(t, l, "alice", 1)
	l.sweepAll()
	for i := range l.shards {
		s := &l.shards[i]
		if s.peak != len(s.entries) {
			t.Fatalf("shard %d: peak %d with %d entries after sweeping nearly all, want the map remade", i, s.peak, len(s.entries))
		}
	}
}

// TestConcurrentBurst checks, under -race, that concurrent callers of one
// key share its burst exactly.
func TestConcurrentBurst(t *testing.T) {
	c := newClock()
	l := New(Config{Rate: 1, Burst: 50, Now: c.Now})
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 100 {
				if ok, _ := l.Allow("shared"); ok {
					allowed.Add(1)
				}
				l.Allow(fmt.Sprintf("own%d-%d", g, i))
			}
		})
	}
	wg.Wait()
	if got := allowed.Load(); got != 50 {
		t.Errorf("8 goroutines were allowed %d calls of a burst of 50, want 50", got)
	}
}

// sweepAll sweeps every shard now, for tests.
func (l *Limiter) sweepAll() {
	now := int64(l.now().Sub(l.base))
	for i := range l.shards {
		s := &l.shards[i]
		s.mu.Lock()
		l.sweepLocked(s, now)
		s.mu.Unlock()
	}
}

func BenchmarkAllow(b *testing.B) {
	l := New(Config{Rate: 1e9})
	keys := make([]string, 1<<16)
	for i := range keys {
		keys[i] = fmt.Sprintf("user%d", i)
	}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			l.Allow(keys[i&(len(keys)-1)])
			i++
		}
	})
}

// TestTinyRate: a rate so small that its fill time overflows nanoseconds
// still limits: the bucket is kept, not swept as if it had filled.
func TestTinyRate(t *testing.T) {
	c := newClock()
	l := New(Config{Rate: 1e-15, Now: c.Now})
	mustAllow(t, l, "u", 1)
	for range 3 {
		c.Advance(24 * time.Hour)
		if ok, _ := l.Allow("u"); ok {
			t.Fatal("a second call within a day at 1e-15 a second was allowed")
		}
	}
}
