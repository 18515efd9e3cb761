package postgres

import (
	"slices"
	"sync"
	"testing"
)

// TestSequencer: tickets done in any order emit in ticket order, and a
// ticket done without events passes its turn on.
func TestSequencer(t *testing.T) {
	q := newSequencer()
	const n = 50
	tickets := make([]uint64, n)
	for i := range tickets {
		tickets[i] = q.ticket()
	}
	var mu sync.Mutex
	var got []uint64
	var wg sync.WaitGroup
	for i := n - 1; i >= 0; i-- { // started last first
		wg.Go(func() {
			var emit func()
			if i%3 != 0 {
				emit = func() {
					mu.Lock()
					got = append(got, tickets[i])
					mu.Unlock()
				}
			}
			q.done(tickets[i], emit)
		})
	}
	wg.Wait()
	var want []uint64
	for i, tk := range tickets {
		if i%3 != 0 {
			want = append(want, tk)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("emitted %v, want %v", got, want)
	}

	// A panicking sink does not stall the later tickets.
	a, b := q.ticket(), q.ticket()
	func() {
		defer func() { recover() }()
		q.done(a, func() { panic("sink") })
	}()
	ran := false
	q.done(b, func() { ran = true })
	if !ran {
		t.Errorf("ticket after a panicking emit did not run")
	}
}
