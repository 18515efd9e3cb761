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

// Requests of the yield tests, by their input.
const (
	blocker  = 0 // the first request: its batch is held until the callers queue
	first    = 2 // each caller's first request
	second   = 4 // a caller's request after its first was answered
	oneShot  = 6 // a request of a caller that never comes back
	nCallers = groupcommit.YieldAfter + 6
)

// heldWriter is a Writer whose commit records each batch's size and holds
// a batch that hold picks (one whose first request is the blocker, or any
// of first requests while holdFirst is set) until the test releases it.
// Cleanup releases every hold and gate before it closes the Writer, so
// that a test that fails half-way does not hang.
type heldWriter struct {
	w         *groupcommit.Writer[int, int]
	holdFirst bool          // set before the Writer starts
	held      chan struct{} // a held batch began: one send each
	release   chan struct{} // closed by Cleanup; one receive per held batch otherwise
	released  sync.Once
	flood     chan struct{} // closed once a batch of second or one-shot requests committed, or by Cleanup
	flooded   sync.Once

	mu    sync.Mutex
	sizes []int // guarded by mu
}

func newHeldWriter(t *testing.T, cfg groupcommit.Config, holdFirst bool) *heldWriter {
	h := &heldWriter{holdFirst: holdFirst, held: make(chan struct{}), release: make(chan struct{}), flood: make(chan struct{})}
	h.w = groupcommit.New(func(batch []*groupcommit.Request[int, int]) (func(), error) {
		if in := batch[0].In; in == blocker || in == first && h.holdFirst {
			select {
			case h.held <- struct{}{}:
			case <-h.release:
			}
			<-h.release
		}
		h.mu.Lock()
		h.sizes = append(h.sizes, len(batch))
		h.mu.Unlock()
		if in := batch[0].In; in == second || in == oneShot {
			h.openFlood() // the batch after the callers' first
		}
		return double(batch)
	}, cfg)
	t.Cleanup(func() { h.w.Close() })
	t.Cleanup(func() { // runs first
		h.released.Do(func() { close(h.release) })
		h.openFlood()
	})
	return h
}

func (h *heldWriter) openFlood() { h.flooded.Do(func() { close(h.flood) }) }

// letGo lets the held batch commit.
func (h *heldWriter) letGo() { h.release <- struct{}{} }

// batchSizes returns the sizes of the batches committed so far.
func (h *heldWriter) batchSizes() []int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]int(nil), h.sizes...)
}

// do calls Do on a goroutine of wg, reporting an error.
func (h *heldWriter) do(t *testing.T, wg *sync.WaitGroup, in int, then func()) {
	wg.Go(func() {
		if _, err := h.w.Do(context.Background(), in); err != nil {
			t.Errorf("Do(%d) error = %v", in, err)
			return
		}
		if then != nil {
			then()
		}
	})
}

// awaitQueued is waitQueued from the test's goroutine.
func awaitQueued(t *testing.T, w *groupcommit.Writer[int, int], n int) {
	t.Helper()
	if err := waitQueued(w, n); err != nil {
		t.Fatal(err)
	}
}

// waitQueued waits until at least n requests are queued for the writer,
// from any goroutine (the writer's, in a Yield).
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
// more itself, it yields before its next batch until as many requests are
// queued as it woke (plus those queued before it woke them), a turn adds
// nothing, or eight turns have passed, so that a closed loop of callers
// keeps committing in whole batches instead of settling into halves.
//
// nCallers callers send twice. Their second sends wait for tokens that the
// test's Yield hands out, perTurn a call, as the scheduler would let them
// run; one caller (none with a backlog) comes back at once, to start the
// next batch. The batch after the callers' first opens the gates of the
// rest, so that the test ends whatever the writer did, and the batch sizes
// tell.
func TestYieldToWokenCallers(t *testing.T) {
	inline := groupcommit.Config{Flush: func() error { return nil }, FlushInline: func() bool { return true }}
	cases := []struct {
		name       string
		cfg        groupcommit.Config
		perTurn    int
		backlog    int // one-shot requests queued while the callers' batch commits
		wantYields int
		wantBatch  int // the batch after the callers' first
	}{
		{"all in one turn", groupcommit.Config{}, nCallers, 0, 1, nCallers},
		// 17, 34, 51, 68 of the 69 back after four turns: one more.
		{"17 a turn", groupcommit.Config{}, 17, 0, 5, nCallers},
		{"17 a turn, inline flush", inline, 17, 0, 5, nCallers},
		{"five a turn: eight turns at most", groupcommit.Config{}, 5, 0, 8, 1 + 8*5},
		{"behind a backlog", groupcommit.Config{}, nCallers, nCallers, 1, 2 * nCallers},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tokens := make(chan struct{}, nCallers)
			handed := 0
			yields := 0
			var h *heldWriter
			tc.cfg.MaxBatch = 256
			gated, queued := nCallers-1, 0 // the callers who wait for a token; the backlog's still queued
			if tc.backlog > 0 {
				// The writer holds the backlog's first request.
				gated, queued = nCallers, tc.backlog-1
			}
			tc.cfg.Yield = func() {
				yields++
				for range min(tc.perTurn, gated-handed) {
					tokens <- struct{}{}
					handed++
				}
				if err := waitQueued(h.w, queued+handed); err != nil {
					t.Error(err)
				}
			}
			h = newHeldWriter(t, tc.cfg, tc.backlog > 0)
			var wg sync.WaitGroup
			h.do(t, &wg, blocker, nil)
			<-h.held
			for i := range nCallers {
				h.do(t, &wg, first, func() {
					if i > 0 || tc.backlog > 0 {
						select {
						case <-tokens:
						case <-h.flood:
						}
					}
					h.do(t, &wg, second, nil)
				})
			}
			awaitQueued(t, h.w, nCallers)
			h.letGo()
			if tc.backlog > 0 {
				<-h.held // the callers' batch
				for range tc.backlog {
					h.do(t, &wg, oneShot, nil)
				}
				awaitQueued(t, h.w, tc.backlog)
				h.letGo()
			}
			wg.Wait()
			got := h.batchSizes()
			if len(got) < 3 || got[1] != nCallers || got[2] != tc.wantBatch {
				t.Errorf("batch sizes = %v, want [1 %d %d ...]", got, nCallers, tc.wantBatch)
			}
			if st := h.w.Stats(); yields != tc.wantYields || st.Yields != uint64(tc.wantYields) {
				t.Errorf("Yield called %d times, Stats().Yields = %d, want %d", yields, st.Yields, tc.wantYields)
			}
		})
	}
}

// TestYieldStopsWhenNobodyComesBack: a turn that adds nothing to the queue
// ends the yields: callers that do not send again are not waited for.
func TestYieldStopsWhenNobodyComesBack(t *testing.T) {
	yields := 0
	h := newHeldWriter(t, groupcommit.Config{MaxBatch: 256, Yield: func() { yields++ }}, false)
	var wg sync.WaitGroup
	h.do(t, &wg, blocker, nil)
	<-h.held
	for range groupcommit.YieldAfter {
		h.do(t, &wg, oneShot, nil)
	}
	awaitQueued(t, h.w, groupcommit.YieldAfter)
	h.letGo()
	wg.Wait()
	if _, err := h.w.Do(context.Background(), second); err != nil {
		t.Fatalf("Do() error = %v", err)
	}
	if yields != 1 {
		t.Errorf("Yield called %d times before the batch after %d callers who did not come back, want 1", yields, groupcommit.YieldAfter)
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
		{"small batches", groupcommit.YieldAfter - 1, groupcommit.Config{}},
		{"the flusher's batches", nCallers, groupcommit.Config{Flush: func() error { return nil }}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			yields := 0
			tc.cfg.MaxBatch = 256
			tc.cfg.Yield = func() { yields++ }
			h := newHeldWriter(t, tc.cfg, false)
			var wg sync.WaitGroup
			h.do(t, &wg, blocker, nil)
			<-h.held
			for range tc.n {
				h.do(t, &wg, first, func() {
					for range 2 {
						if _, err := h.w.Do(context.Background(), second); err != nil {
							t.Errorf("Do() error = %v", err)
						}
					}
				})
			}
			awaitQueued(t, h.w, tc.n)
			h.letGo()
			wg.Wait()
			if yields != 0 || h.w.Stats().Yields != 0 {
				t.Errorf("Yield called %d times (batches %v), want 0", yields, h.batchSizes())
			}
		})
	}
}
