package ratelimit

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestBackoffConcurrentSuccesses: attempts that all succeed, a hundred at
// once, never wait for failures: each is let through once those in flight
// before it leave room, at most Free at a time, and nothing stays on
// record after them.
func TestBackoffConcurrentSuccesses(t *testing.T) {
	b := NewBackoff(BackoffConfig{Free: 5, Now: newClock().Now})
	var inFlight, most atomic.Int64
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			end, wait, err := b.Begin(context.Background(), "k")
			if end == nil {
				t.Errorf("Begin = a wait of %v, %v; want every success let through", wait, err)
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
	if got := most.Load(); got > 5 {
		t.Errorf("%d attempts in flight at once, want at most Free (5)", got)
	}
	if got := b.Len(); got != 0 {
		t.Errorf("Len() = %d after successes only, want 0", got)
	}
}

// TestBackoffParallelFailures: 16 parallel guesses at one key get the
// free failures checked, then one backed-off try per wait, whatever their
// number; the rest are refused with the wait their failures earned.
func TestBackoffParallelFailures(t *testing.T) {
	c := newClock()
	b := NewBackoff(BackoffConfig{Free: 3, Base: time.Second, Now: c.Now})
	round := func(wantThrough int, wantWait time.Duration) {
		t.Helper()
		ends := make(chan func(bool), 16)
		var refused atomic.Int64
		var wg sync.WaitGroup
		for range 16 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				end, wait, err := b.Begin(context.Background(), "k")
				switch {
				case end != nil:
					ends <- end
				case err != nil || wait != wantWait:
					t.Errorf("Begin = a wait of %v, %v; want %v", wait, err, wantWait)
				default:
					refused.Add(1)
				}
			}()
		}
		// The guesses let through fail only once all of them are in:
		// until then the others wait for them.
		for range wantThrough {
			(<-ends)(true)
		}
		wg.Wait()
		close(ends)
		if extra := len(ends); extra > 0 {
			t.Errorf("%d more guesses let through than %d", extra, wantThrough)
		}
		if got := refused.Load(); got != int64(16-wantThrough) {
			t.Errorf("%d guesses refused, want %d", got, 16-wantThrough)
		}
	}
	round(3, time.Second) // the free failures, then a wait of Base
	c.Advance(time.Second)
	round(1, 2*time.Second) // one backed-off try, then a wait twice as long
}

// TestBackoffWaitsForInFlight: an attempt with no room waits for one in
// flight to end, and is let through when that one succeeds.
func TestBackoffWaitsForInFlight(t *testing.T) {
	b := NewBackoff(BackoffConfig{Free: 2, Now: newClock().Now})
	first, _ := mustBegin(t, b, "k")
	second, _ := mustBegin(t, b, "k")
	if first == nil || second == nil {
		t.Fatal("the first two attempts were not let through")
	}
	got := make(chan func(bool), 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a broken wait fails, not hangs
		defer cancel()
		end, wait, err := b.Begin(ctx, "k")
		if end == nil {
			t.Errorf("third Begin = a wait of %v, %v; want it let through", wait, err)
		}
		got <- end
	}()
	first(false)
	if third := <-got; third != nil {
		third(false)
	}
	second(false)
	if n := b.Len(); n != 0 {
		t.Errorf("Len() = %d once every attempt succeeded, want 0", n)
	}
}

// TestBackoffBusy: an attempt whose deadline passes while the attempts in
// flight leave it no room is refused with ctx's error, not a wait, and
// reserves nothing.
func TestBackoffBusy(t *testing.T) {
	b := NewBackoff(BackoffConfig{Free: 1, Base: time.Second, Now: newClock().Now})
	end, _ := mustBegin(t, b, "k")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if e, wait, err := b.Begin(ctx, "k"); e != nil || wait != 0 || !errors.Is(err, context.Canceled) {
		t.Errorf("Begin past its deadline = %v, %v, %v; want no reservation, no wait, context.Canceled", e != nil, wait, err)
	}
	end(true)
	if e, wait := mustBegin(t, b, "k"); e != nil || wait != time.Second {
		t.Errorf("Begin after the one failure = %v, %v; want a wait of 1s (the refused one counted nothing)", e != nil, wait)
	}
}

// TestBackoffOneTryAfterWait: once a key's wait is over, one attempt at a
// time is let through until the outcome is known.
func TestBackoffOneTryAfterWait(t *testing.T) {
	c := newClock()
	b := NewBackoff(BackoffConfig{Free: 1, Base: time.Second, Now: c.Now})
	mustFail(t, b, "k")
	c.Advance(time.Second)
	end, _ := mustBegin(t, b, "k")
	if end == nil {
		t.Fatal("the try after the wait was not let through")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if e, _, err := b.Begin(ctx, "k"); e != nil || err == nil {
		t.Errorf("a second try while the first is in flight = %v, %v; want it to wait (busy)", e != nil, err)
	}
	end(true)
	if e, wait := mustBegin(t, b, "k"); e != nil || wait != 2*time.Second {
		t.Errorf("Begin after the try failed = %v, %v; want a wait of 2s", e != nil, wait)
	}
}

// TestBackoffResetWakes: a reset makes room for the attempts waiting, and
// keeps those in flight reserved.
func TestBackoffResetWakes(t *testing.T) {
	b := NewBackoff(BackoffConfig{Free: 2, Now: newClock().Now})
	mustFail(t, b, "k")
	held, _ := mustBegin(t, b, "k") // 1 failure + 1 in flight: no room
	got := make(chan func(bool), 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a broken wait fails, not hangs
		defer cancel()
		end, wait, err := b.Begin(ctx, "k")
		if end == nil {
			t.Errorf("Begin after the reset = a wait of %v, %v; want it let through", wait, err)
		}
		got <- end
	}()
	b.Reset("k")
	third := <-got
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if e, _, err := b.Begin(ctx, "k"); e != nil || err == nil {
		t.Errorf("Begin with two in flight after the reset = %v, %v; want it to wait", e != nil, err)
	}
	held(false)
	if third != nil {
		third(false)
	}
	if n := b.Len(); n != 0 {
		t.Errorf("Len() = %d, want 0", n)
	}
}
