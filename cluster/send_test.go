package cluster_test

import (
	"context"
	"sync"
	"testing"

	"parley"
	"parley/cluster"
)

// holdWatermark is a cluster.Watermark whose commits are written when the
// test says so.
type holdWatermark struct {
	mu      sync.Mutex
	marked  uint64
	written uint64
	moved   chan struct{} // closed and replaced when written moves
}

func newHoldWatermark() *holdWatermark { return &holdWatermark{moved: make(chan struct{})} }

// take is the hot data's Apply of a commit.
func (w *holdWatermark) take() {
	w.mu.Lock()
	w.marked++
	w.mu.Unlock()
}

func (w *holdWatermark) Mark() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.marked
}

func (w *holdWatermark) Await(ctx context.Context, mark uint64) {
	for {
		w.mu.Lock()
		done, ch := w.written >= mark, w.moved
		w.mu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
}

// write marks the commits through mark written.
func (w *holdWatermark) write(mark uint64) {
	w.mu.Lock()
	w.written = mark
	close(w.moved)
	w.moved = make(chan struct{})
	w.mu.Unlock()
}

// TestRelayPublishesOnceHotDataHoldsIt: a commit of node a reaches its
// own sessions at once, but goes to node b, and its head to Heads, only
// once the hot data (Config.Written) holds it, so that a client on b that
// hears of the message reads it from Redis too.
func TestRelayPublishesOnceHotDataHoldsIt(t *testing.T) {
	store := &fakeStore{members: map[string][]string{"r": {"x", "y"}}, msgs: map[string][]parley.Message{}}
	heads := &memHeads{heads: map[string]int64{}}
	w := newHoldWatermark()
	nodes := newHeadNodesWith(t, store, heads, []string{"a", "b"}, func(name string, cfg *cluster.Config) {
		if name == "a" {
			cfg.Written = w
		}
	})
	a, b := nodes["a"], nodes["b"]
	a.inner.Add(context.Background(), "x")
	b.inner.Add(context.Background(), "y")
	w.take()
	a.relay.Apply([]parley.Event{store.commit("r", "x")})
	w.write(1)
	waitSeqs(t, b.local, "y", 1)
	waitHead(t, heads, "r", 1)
	published := a.broker.published.Load()

	w.take()
	a.relay.Apply([]parley.Event{store.commit("r", "x")})
	waitSeq(t, a.local, "x", 2) // local delivery does not wait for the hot data
	if got := a.broker.published.Load(); got != published {
		t.Errorf("a published %d batches of a commit the hot data does not hold yet, want none", got-published)
	}
	if got := heads.head("r"); got != 1 {
		t.Errorf("head of r = %d before the hot data holds seq 2, want 1", got)
	}
	w.write(2)
	waitSeq(t, b.local, "y", 2)
	waitHead(t, heads, "r", 2)
}
