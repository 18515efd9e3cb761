package cluster

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/inmem"
)

// memStore is a store of one room's messages, counting its reads.
type memStore struct {
	mu    sync.Mutex
	msgs  []parley.Message
	reads int
}

func (s *memStore) Members(ctx context.Context, roomID string) ([]string, error) {
	return []string{"y"}, nil
}

func (s *memStore) Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	var out []parley.Message
	for _, m := range s.msgs {
		if m.Seq > p.After && len(out) < p.Limit {
			out = append(out, m)
		}
	}
	return out, nil
}

// commit stores seqs up to n.
func (s *memStore) commit(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for seq := int64(len(s.msgs)) + 1; seq <= n; seq++ {
		s.msgs = append(s.msgs, parley.Message{ID: parley.NewID(), RoomID: "r", Seq: seq})
	}
}

func (s *memStore) event(seq int64) parley.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := s.msgs[seq-1]
	return parley.Event{Kind: parley.EventMessage, Room: parley.Room{ID: "r", LastSeq: seq}, Message: m}
}

// seqLocal records the seqs delivered.
type seqLocal struct{ seqs []int64 }

func (l *seqLocal) Deliver(m parley.Message, _ []string) {
	l.seqs = append(l.seqs, m.Seq)
}

// newBareRelay is a relay whose run goroutine the test plays: it calls the
// handlers itself, and no gap timer fires (GapWait is an hour), so every
// fill it sees is one the test asked for.
func newBareRelay(t *testing.T, store Store, local Local) *Relay {
	r := New(Config{Node: "b", Store: store, Local: local, ApplyLeaves: func([]parley.Event) {}, GapWait: time.Hour})
	p := inmem.NewRegistry().Presence(inmem.PresenceConfig{Node: "b"})
	t.Cleanup(func() { p.Close() })
	r.presence = p
	return r
}

// TestOneFillClosesEveryGap: remote batches arrive for every other seq
// (the others were never sent), so holes sit below many held seqs; one
// gap timeout reads them all from the store, however wide, instead of
// the hole below the lowest held seq alone (one hole per GapWait).
func TestOneFillClosesEveryGap(t *testing.T) {
	tests := []struct {
		name string
		held []int64 // seqs that arrive in batches after seq 1
		last int64   // the store's newest seq
	}{
		{"every other seq", evens(4, 400), 400},
		{"one held far ahead", []int64{7000}, 7000},
		{"holes across pages", append(evens(2, 1200), 3001, 3003), 3003},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store, local := &memStore{}, &seqLocal{}
			r := newBareRelay(t, store, local)
			store.commit(tc.last)
			b1 := parley.Batch{Node: "b", Event: store.event(1), Recipients: []string{"y"}}
			r.receive(&b1)
			for _, seq := range tc.held {
				b := parley.Batch{Node: "b", Event: store.event(seq), Recipients: []string{"y"}}
				r.receive(&b)
			}
			r.gapTimeout("r")
			runQueued(r)
			if want := seqsTo(tc.last); !slices.Equal(local.seqs, want) {
				t.Errorf("after one gap timeout: delivered %d seqs (%v...), want 1..%d", len(local.seqs), local.seqs[:min(len(local.seqs), 8)], tc.last)
			}
			if n := len(r.rooms["r"].held); n != 0 {
				t.Errorf("after one gap timeout: %d messages still held, want 0", n)
			}
		})
	}
}

// TestLocalCommitNotHeldBehindRemoteGap: the node's own commit that finds
// the room's previous seqs missing (their batches are late or lost) is
// delivered at once, with the gap read from the store, not after GapWait.
func TestLocalCommitNotHeldBehindRemoteGap(t *testing.T) {
	tests := []struct {
		name  string
		first int64 // the room's seq this node delivered before
		local int64 // the seq this node commits
	}{
		{"one remote seq missing", 1, 3},
		{"many remote seqs missing", 1, 1500},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store, local := &memStore{}, &seqLocal{}
			r := newBareRelay(t, store, local)
			store.commit(tc.local)
			b := parley.Batch{Node: "b", Event: store.event(tc.first), Recipients: []string{"y"}}
			r.receive(&b)
			ev := store.event(tc.local)
			r.local(&ev)
			runQueued(r)
			if len(local.seqs) == 0 || local.seqs[len(local.seqs)-1] != tc.local {
				t.Errorf("local commit of seq %d: delivered %v, want it delivered at once", tc.local, local.seqs[max(0, len(local.seqs)-5):])
			}
			if !slices.Equal(local.seqs, seqsTo(tc.local)) {
				t.Errorf("local commit of seq %d: delivered %d seqs, want 1..%d", tc.local, len(local.seqs), tc.local)
			}
		})
	}
}

// runQueued handles what the relay queued for its run goroutine: the
// continuation ticks of a fill that read its maximum of pages (a gap timer
// never fires here).
func runQueued(r *Relay) {
	for {
		r.qmu.Lock()
		q := r.queue
		r.queue = nil
		r.qmu.Unlock()
		if len(q) == 0 {
			return
		}
		for i := range q {
			r.handle(&q[i])
		}
	}
}

func evens(from, to int64) []int64 {
	var out []int64
	for s := from; s <= to; s += 2 {
		out = append(out, s)
	}
	return out
}

func seqsTo(n int64) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(i + 1)
	}
	return out
}

// TestLocalCommitInUnseenRoomWaitsForOlder: in a room the node has never
// delivered, its own commit of seq 2 does not overtake seq 1 still on its
// way from another node (the gap's start is unknown, so it waits for it).
func TestLocalCommitInUnseenRoomWaitsForOlder(t *testing.T) {
	store, local := &memStore{}, &seqLocal{}
	r := newBareRelay(t, store, local)
	store.commit(2)
	ev := store.event(2)
	r.local(&ev)
	runQueued(r)
	b := parley.Batch{Node: "b", Event: store.event(1), Recipients: []string{"y"}}
	r.receive(&b)
	if want := seqsTo(2); !slices.Equal(local.seqs, want) {
		t.Errorf("local seq 2 then remote seq 1 in a room never seen: delivered %v, want %v", local.seqs, want)
	}
}
