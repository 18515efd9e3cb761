package history_test

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/history"
	"parley/parleytest"
	"parley/sqlite"
)

var ctx = context.Background()

// counting counts the inner store's Messages calls.
type counting struct {
	parley.Store
	calls atomic.Int64
}

func (c *counting) Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error) {
	c.calls.Add(1)
	return c.Store.Messages(ctx, roomID, p)
}

func openSQLite(t *testing.T, sink parley.EventSink) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "parley.db"), Sync: sqlite.SyncOff, OnCommit: sink})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestStoreConformance: the store suite passes through the cache, with
// room for one block only (it evicts all the time).
func TestStoreConformance(t *testing.T) {
	for _, max := range []int{0, 1} {
		t.Run(fmt.Sprint("max=", max), func(t *testing.T) {
			parleytest.RunStoreTests(t, func(t *testing.T, sink parley.EventSink) parley.Store {
				return history.New(openSQLite(t, sink), history.Config{MaxBytes: max})
			})
		})
	}
}

// room makes a room with n messages and returns the stores and the room.
func room(t *testing.T, n int, cfg history.Config) (*history.Store, *counting, parley.Room) {
	t.Helper()
	inner := &counting{Store: openSQLite(t, nil)}
	h := history.New(inner, cfg)
	u := parleytest.MustCreateUser(t, h, "ann")
	r := parleytest.MustCreateRoom(t, h, u, "long", 0)
	for i := range n {
		parleytest.MustSend(t, h, r, u, fmt.Sprint("message ", i+1))
	}
	return h, inner, r
}

func seqsOf(msgs []parley.Message) string {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Seq
	}
	return fmt.Sprint(out)
}

// TestPagesMatchInnerStore: every older and catching-up page, at several
// sizes, is the inner store's page, message for message; once warm the
// pages inside full blocks do not reach the inner store.
func TestPagesMatchInnerStore(t *testing.T) {
	const n = 1050 // 10 full blocks of 100, then 50 messages
	h, inner, r := room(t, n, history.Config{})
	var pages []parley.Page
	for _, limit := range []int{1, 7, 50, 100} {
		for before := int64(1); before <= n+60; before += 13 {
			pages = append(pages, parley.Page{Before: before, After: -1, Limit: limit})
		}
		for after := int64(0); after <= n+10; after += 11 {
			pages = append(pages, parley.Page{After: after, Limit: limit})
		}
		pages = append(pages, parley.Newest(limit), parley.Page{Before: 101, After: -1, Limit: limit},
			parley.Page{After: math.MaxInt64 - 1, Limit: limit}, parley.Page{After: math.MaxInt64, Limit: limit})
	}
	check := func(round string) {
		for _, p := range pages {
			got, err := h.Messages(ctx, r.ID, p)
			if err != nil {
				t.Fatalf("%s: Messages(%+v) error = %v", round, p, err)
			}
			want, err := inner.Store.Messages(ctx, r.ID, p)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(want) {
				t.Fatalf("%s: Messages(%+v) seqs = %s, want %s", round, p, seqsOf(got), seqsOf(want))
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], want[i]) {
					t.Fatalf("%s: Messages(%+v)[%d] = %+v, want %+v", round, p, i, got[i], want[i])
				}
			}
		}
	}
	check("cold")
	inner.calls.Store(0)
	for _, p := range pages {
		if p.Forward() && p.After > 1000-int64(p.Limit) || !p.Forward() && (p.Before <= 1 || p.Before > 1001) {
			continue // reaches past the full blocks: the inner store's
		}
		if _, err := h.Messages(ctx, r.ID, p); err != nil {
			t.Fatal(err)
		}
	}
	if got := inner.calls.Load(); got != 0 {
		t.Errorf("warm pages inside full blocks made %d inner reads, want 0", got)
	}
	check("warm")
}

// TestBoundAndStampede: concurrent misses of one block load it once, and
// the cache keeps at most MaxBytes (here two blocks of ~25 kB).
func TestBoundAndStampede(t *testing.T) {
	h, inner, r := room(t, 600, history.Config{MaxBytes: 60_000})
	inner.calls.Store(0)
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			got, err := h.Messages(ctx, r.ID, parley.Page{Before: 151, After: -1, Limit: 50})
			if err != nil || seqsOf(got) != seqsOf(wantRange(150, 101)) {
				t.Errorf("Messages(before 151) = %s, %v", seqsOf(got), err)
			}
		})
	}
	wg.Wait()
	if got := inner.calls.Load(); got != 1 {
		t.Errorf("50 concurrent misses of one block made %d inner reads, want 1", got)
	}
	// Walk all 6 blocks, newest first: only 2 fit, so the newest is gone.
	for before := int64(601); before > 1; before -= 100 {
		h.Messages(ctx, r.ID, parley.Page{Before: before, After: -1, Limit: 100})
	}
	inner.calls.Store(0)
	h.Messages(ctx, r.ID, parley.Page{Before: 101, After: -1, Limit: 100})
	if got := inner.calls.Load(); got != 0 {
		t.Errorf("reading the last block read made %d inner reads, want 0", got)
	}
	h.Messages(ctx, r.ID, parley.Page{Before: 601, After: -1, Limit: 100})
	h.Messages(ctx, r.ID, parley.Page{Before: 601, After: -1, Limit: 100})
	if got := inner.calls.Load(); got != 1 {
		t.Errorf("reading an evicted block twice made %d inner reads, want 1", got)
	}
}

func wantRange(from, to int64) []parley.Message {
	var out []parley.Message
	for s := from; s >= to; s-- {
		out = append(out, parley.Message{Seq: s})
	}
	return out
}

// TestNewestEndCostsNothing: a page that reaches the block that is not
// full yet goes to the inner store once, as without the cache, and never
// makes it read the partial block.
func TestNewestEndCostsNothing(t *testing.T) {
	h, inner, r := room(t, 250, history.Config{})
	for _, p := range []parley.Page{
		{Before: 231, After: -1, Limit: 20}, {Before: 251, After: -1, Limit: 50}, {Before: 400, After: -1, Limit: 100},
		{After: 250, Limit: 50}, {After: 240, Limit: 50}, {After: 190, Limit: 20}, parley.Newest(50),
	} {
		for range 2 {
			inner.calls.Store(0)
			got, err := h.Messages(ctx, r.ID, p)
			if err != nil {
				t.Fatal(err)
			}
			want, _ := inner.Store.Messages(ctx, r.ID, p)
			if seqsOf(got) != seqsOf(want) {
				t.Errorf("Messages(%+v) = %s, want %s", p, seqsOf(got), seqsOf(want))
			}
			if n := inner.calls.Load(); n != 1 {
				t.Errorf("Messages(%+v) made %d inner reads, want 1 (the page itself)", p, n)
			}
		}
	}
}

// panicky panics on every Messages call.
type panicky struct{ parley.Store }

func (panicky) Messages(context.Context, string, parley.Page) ([]parley.Message, error) {
	panic("inner store failed")
}

// TestLoadPanicReleasesWaiters: a load whose inner store panics leaves no
// reader waiting for it.
func TestLoadPanicReleasesWaiters(t *testing.T) {
	_, inner, r := room(t, 100, history.Config{})
	bad := history.New(panicky{inner.Store}, history.Config{})
	read := func() {
		defer func() { recover() }()
		bad.Messages(ctx, r.ID, parley.Page{Before: 51, After: -1, Limit: 50})
	}
	read()
	done := make(chan struct{})
	go func() {
		defer close(done)
		read()
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("a read after a panicked load is still waiting")
	}
}
