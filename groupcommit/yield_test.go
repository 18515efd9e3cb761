package groupcommit_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"parley/groupcommit"
)

// closedLoop is a writer whose first batch (the request 0 of a caller of
// its own) is held until n closed-loop callers have queued behind it; each
// caller sends again as soon as it is answered, rounds times. It records
// the batches' sizes.
type closedLoop struct {
	w     *groupcommit.Writer[int, int]
	mu    sync.Mutex
	sizes []int // guarded by mu
	held  chan struct{}
	hold  chan struct{}
	taken chan struct{} // closed when a batch holds a request 4
	once  sync.Once
}

func newClosedLoop(cfg groupcommit.Config) *closedLoop {
	c := &closedLoop{held: make(chan struct{}), hold: make(chan struct{}), taken: make(chan struct{})}
	c.w = groupcommit.New(func(batch []*groupcommit.Request[int, int]) (func(), error) {
		if batch[0].In == 0 {
			close(c.held)
			<-c.hold
		}
		c.mu.Lock()
		c.sizes = append(c.sizes, len(batch))
		c.mu.Unlock()
		if batch[0].In == 4 {
			c.once.Do(func() { close(c.taken) })
		}
		return double(batch)
	}, cfg)
	return c
}

// run holds the writer on a first request, queues n callers behind it,
// lets them go and returns once each has done rounds requests.
func (c *closedLoop) run(t *testing.T, n, rounds int) {
	t.Helper()
	var wg sync.WaitGroup
	wg.Go(func() { c.w.Do(context.Background(), 0) })
	<-c.held
	for range n {
		wg.Go(func() {
			for range rounds {
				if _, err := c.w.Do(context.Background(), 2); err != nil {
					t.Errorf("Do() error = %v", err)
					return
				}
			}
		})
	}
	if err := waitQueued(c.w, n); err != nil {
		t.Fatal(err)
	}
	close(c.hold)
	wg.Wait()
}

// batchSizes returns the sizes of the batches after the held one.
func (c *closedLoop) batchSizes() []int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.sizes[1:]
}

// waitQueued waits until at least n requests are queued for the writer.
func waitQueued(w *groupcommit.Writer[int, int], n int) error {
	deadline := time.Now().Add(10 * time.Second)
	for w.Queued() < n {
		if time.Now().After(deadline) {
			return fmt.Errorf("Queued() = %d after 10s, want %d", w.Queued(), n)
		}
		runtime.Gosched()
	}
	return nil
}

// TestYieldToWokenCallers: once the writer has woken YieldAfter callers or
// more itself, it yields before its next batch until they are back in the
// queue, so that a closed loop of callers keeps committing in whole
// batches instead of settling into halves. The callers' second sends wait
// on a gate that the writer's Yield opens (as the scheduler would let them
// run); a batch taken while the gate is closed opens it too, so that the
// test ends either way and the batch sizes tell.
func TestYieldToWokenCallers(t *testing.T) {
	const n = groupcommit.YieldAfter + 6
	gate := make(chan struct{})
	var gateOnce sync.Once
	open := func() { gateOnce.Do(func() { close(gate) }) }
	yields := 0
	var c *closedLoop
	c = newClosedLoop(groupcommit.Config{MaxBatch: 256, Yield: func() {
		yields++
		open()
		if err := waitQueued(c.w, n-1); err != nil { // the writer holds one already
			t.Error(err)
		}
	}})
	defer c.w.Close()
	var wg sync.WaitGroup
	wg.Go(func() { c.w.Do(context.Background(), 0) })
	<-c.held
	for i := range n {
		wg.Go(func() {
			if _, err := c.w.Do(context.Background(), 2); err != nil {
				t.Errorf("Do() error = %v", err)
				return
			}
			if i > 0 { // one comes back at once, to start the next batch
				select {
				case <-gate:
				case <-c.taken:
				}
			}
			if _, err := c.w.Do(context.Background(), 4); err != nil {
				t.Errorf("Do() error = %v", err)
			}
		})
	}
	if err := waitQueued(c.w, n); err != nil {
		t.Fatal(err)
	}
	close(c.hold)
	wg.Wait()
	if got := c.batchSizes(); len(got) != 2 || got[0] != n || got[1] != n {
		t.Errorf("batch sizes after the held one = %v, want [%d %d]", got, n, n)
	}
	if st := c.w.Stats(); yields != 1 || st.Yields != 1 {
		t.Errorf("Yield called %d times, Stats().Yields = %d, want 1", yields, st.Yields)
	}
}

// TestYieldStopsWhenNobodyComesBack: a turn that adds nothing to the queue
// ends the yields: callers that do not send again are not waited for.
func TestYieldStopsWhenNobodyComesBack(t *testing.T) {
	const n = groupcommit.YieldAfter
	yields := 0
	c := newClosedLoop(groupcommit.Config{MaxBatch: 256, Yield: func() { yields++ }})
	defer c.w.Close()
	c.run(t, n, 1) // each caller once: none comes back
	if _, err := c.w.Do(context.Background(), 4); err != nil {
		t.Fatalf("Do() error = %v", err)
	}
	if yields != 1 {
		t.Errorf("Yield called %d times before the batch after %d callers who did not come back, want 1", yields, n)
	}
}

// TestNoYield: the writer never yields after a batch of fewer than
// YieldAfter requests, nor after one the flusher completed (its callers
// were woken while the writer went on with the next batch).
func TestNoYield(t *testing.T) {
	cases := []struct {
		name string
		n    int
		cfg  groupcommit.Config
	}{
		{"small batches", groupcommit.YieldAfter - 1, groupcommit.Config{MaxBatch: 256}},
		{"the flusher's batches", groupcommit.YieldAfter + 6, groupcommit.Config{MaxBatch: 256, Flush: func() error { return nil }}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			yields := 0
			tc.cfg.Yield = func() { yields++ }
			c := newClosedLoop(tc.cfg)
			defer c.w.Close()
			c.run(t, tc.n, 3)
			if yields != 0 || c.w.Stats().Yields != 0 {
				t.Errorf("Yield called %d times (batches %v), want 0", yields, c.batchSizes())
			}
		})
	}
}
