package ratelimit

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// fakeSource is a Source in memory: one Limiter of the rate and burst of
// the first Take, shared by every Shared that takes from it.
type fakeSource struct {
	now func() time.Time

	mu     sync.Mutex // guards the following fields
	bucket *Limiter
	takes  int   // calls of Take
	err    error // returned by Take when set
}

func (f *fakeSource) Take(ctx context.Context, key string, n int, rate float64, burst int) (int, time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.takes++
	if f.err != nil {
		return 0, 0, f.err
	}
	if f.bucket == nil {
		f.bucket = New(Config{Rate: rate, Burst: burst, Now: f.now})
	}
	taken := 0
	for taken < n {
		ok, wait := f.bucket.Allow(key)
		if !ok {
			if taken == 0 {
				return 0, wait, nil
			}
			break
		}
		taken++
	}
	return taken, 0, nil
}

func (f *fakeSource) fail(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeSource) calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.takes
}

// allowed counts the calls of key that l allows out of n.
func allowed(l interface {
	Allow(string) (bool, time.Duration)
}, key string, n int) int {
	got := 0
	for range n {
		if ok, _ := l.Allow(key); ok {
			got++
		}
	}
	return got
}

// TestSharedOneBudget: three nodes taking from one Source allow one key
// one budget between them, not three, and leases keep most decisions off
// the Source.
func TestSharedOneBudget(t *testing.T) {
	c := newClock()
	src := &fakeSource{now: c.Now}
	var nodes []*Shared
	for range 3 {
		nodes = append(nodes, NewShared(SharedConfig{Rate: 10, Burst: 40, Lease: 4, Source: src, Now: c.Now}))
	}
	total := 0
	for range 20 { // interleaved over the nodes, as a client spread over them
		for _, n := range nodes {
			total += allowed(n, "alice", 1)
		}
	}
	if total != 40 {
		t.Errorf("3 nodes allowed %d of 60 calls in a burst of 40, want 40", total)
	}
	if takes := src.calls(); takes > 40/4+3*2 {
		t.Errorf("%d Takes for %d allowed calls with leases of 4, want at most %d", takes, total, 40/4+3*2)
	}
	// A refused key is refused locally until a token can be there.
	before := src.calls()
	for _, n := range nodes {
		if ok, wait := n.Allow("alice"); ok || wait <= 0 {
			t.Errorf("Allow after the budget = %v, %v; want false and a wait", ok, wait)
		}
	}
	if got := src.calls() - before; got > 0 {
		t.Errorf("%d Takes for keys refused a moment ago, want 0", got)
	}
	// Time refills the shared bucket at Rate.
	c.Advance(time.Second)
	total = 0
	for _, n := range nodes {
		total += allowed(n, "alice", 10)
	}
	if total != 10 {
		t.Errorf("after 1 s at 10/s the nodes allowed %d, want 10", total)
	}
	if bob := allowed(nodes[0], "bob", 40); bob != 40 {
		t.Errorf("bob allowed %d of his own 40, want 40", bob)
	}
}

// TestSharedSourceDown: when the Source fails, each node counts per node
// (a full local budget), asks the Source again only after Retry, and
// counts over the cluster again once it answers.
func TestSharedSourceDown(t *testing.T) {
	c := newClock()
	src := &fakeSource{now: c.Now}
	src.fail(errors.New("connection refused"))
	a := NewShared(SharedConfig{Rate: 1, Burst: 5, Lease: 1, Source: src, Now: c.Now, Retry: time.Second})
	b := NewShared(SharedConfig{Rate: 1, Burst: 5, Lease: 1, Source: src, Now: c.Now, Retry: time.Second})
	if got := allowed(a, "alice", 10) + allowed(b, "alice", 10); got != 10 {
		t.Errorf("with the Source down 2 nodes allowed %d, want 10 (5 each, per node)", got)
	}
	if takes := src.calls(); takes != 2 {
		t.Errorf("%d Takes while down within Retry, want 2 (one per node)", takes)
	}
	src.fail(nil)
	c.Advance(2 * time.Second) // Retry passed
	got := allowed(a, "carol", 10) + allowed(b, "carol", 10)
	if got != 5 {
		t.Errorf("Source back: 2 nodes allowed carol %d, want 5 (one budget)", got)
	}
}

// grantAll is a Source that grants every Take in full at once.
type grantAll struct{}

func (grantAll) Take(ctx context.Context, key string, n int, rate float64, burst int) (int, time.Duration, error) {
	return n, 0, nil
}

// BenchmarkSharedAllow is BenchmarkAllow for a Shared limiter whose
// leases are large: the cost of a decision that spends a leased token,
// as most do.
func BenchmarkSharedAllow(b *testing.B) {
	l := NewShared(SharedConfig{Rate: 1e9, Lease: 1 << 20, Source: grantAll{}})
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
