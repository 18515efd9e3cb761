package cache

import (
	"testing"

	"parley"
)

// TestBacklog checks that each load replays the events since it began, and
// that a load that outlasted maxBacklog events is told it cannot.
func TestBacklog(t *testing.T) {
	var b backlog
	ev := func(seq int64) *parley.Event { return &parley.Event{Kind: parley.EventRead, ReadSeq: seq} }
	b.add(ev(0)) // no load: not kept
	first := b.begin()
	b.add(ev(1))
	second := b.begin()
	b.add(ev(2))
	if got, ok := b.since(first); !ok || len(got) != 2 || got[0].ReadSeq != 1 {
		t.Errorf("since(first) = %v, %v; want events 1, 2", got, ok)
	}
	if got, ok := b.since(second); !ok || len(got) != 1 || got[0].ReadSeq != 2 {
		t.Errorf("since(second) = %v, %v; want event 2", got, ok)
	}
	for i := range maxBacklog {
		b.add(ev(int64(3 + i)))
	}
	third := b.begin()
	b.add(ev(-1))
	if _, ok := b.since(first); ok {
		t.Errorf("since(first) after %d more events is ok, want dropped", maxBacklog)
	}
	if got, ok := b.since(third); !ok || len(got) != 1 || got[0].ReadSeq != -1 {
		t.Errorf("since(third) = %v, %v; want the last event", got, ok)
	}
	b.end()
	b.end()
	b.end()
	if b.loads != 0 || len(b.events) != 0 || b.base != 0 {
		t.Errorf("after the last end: %d loads, %d events, base %d; want all zero", b.loads, len(b.events), b.base)
	}
}
