package cluster

import (
	"context"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

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
// continuation ticks of a fill that read its maximum of pages, and the
// pages of the gap reads, once every read on its way has returned (a gap
// timer never fires here).
func runQueued(r *Relay) {
	for {
		r.reads.Wait()
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

// TestRemoteBatchNotHeldBehindGap: a batch from another node that finds
// the room's previous seqs missing (their batches, from a third node, are
// late) is delivered once the store has been read, not after GapWait: its
// commit proves the store has every older seq. The late batches are then
// dropped as duplicates.
func TestRemoteBatchNotHeldBehindGap(t *testing.T) {
	store, local := &memStore{}, &seqLocal{}
	r := newBareRelay(t, store, local)
	store.commit(4)
	for _, seq := range []int64{1, 4} {
		b := parley.Batch{Node: "b", Event: store.event(seq), Recipients: []string{"y"}}
		r.receive(&b)
	}
	runQueued(r)
	if want := seqsTo(4); !slices.Equal(local.seqs, want) {
		t.Fatalf("remote seqs 1 and 4, the store holding 1..4: delivered %v, want %v without a gap timeout", local.seqs, want)
	}
	for _, seq := range []int64{2, 3} {
		b := parley.Batch{Node: "c", Event: store.event(seq), Recipients: []string{"y"}}
		r.receive(&b)
	}
	if want := seqsTo(4); !slices.Equal(local.seqs, want) {
		t.Errorf("after the late batches 2 and 3: delivered %v, want %v (each once)", local.seqs, want)
	}
}

// gateStore is a memStore whose message reads wait for the test: each read
// says it started on started, then waits for release.
type gateStore struct {
	*memStore
	started chan struct{}
	release chan struct{}
}

func (s *gateStore) Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error) {
	s.started <- struct{}{}
	<-s.release
	return s.memStore.Messages(ctx, roomID, p)
}

// TestGapReadDoesNotStopDelivery: while the store read of a gap is on its
// way, the relay goes on taking batches, and the missing batch that
// arrives first closes the gap at once; the page read afterwards delivers
// nothing twice.
func TestGapReadDoesNotStopDelivery(t *testing.T) {
	for _, local := range []bool{false, true} {
		name := "remote"
		if local {
			name = "local"
		}
		t.Run(name, func(t *testing.T) {
			store := &gateStore{memStore: &memStore{}, started: make(chan struct{}, 1), release: make(chan struct{})}
			seqs := &seqLocal{}
			r := newBareRelay(t, store, seqs)
			store.commit(3)
			done := make(chan struct{})
			go func() {
				defer close(done)
				b1 := parley.Batch{Node: "b", Event: store.event(1), Recipients: []string{"y"}}
				r.receive(&b1)
				if ev := store.event(3); local {
					r.local(&ev)
				} else {
					b3 := parley.Batch{Node: "b", Event: ev, Recipients: []string{"y"}}
					r.receive(&b3)
				}
				<-store.started // the gap's read is on its way
				b2 := parley.Batch{Node: "c", Event: store.event(2), Recipients: []string{"y"}}
				r.receive(&b2)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				close(store.release)
				t.Fatal("the relay stopped while the store read a gap: the late batch was not taken")
			}
			if want := seqsTo(3); !slices.Equal(seqs.seqs, want) {
				t.Errorf("before the read returned: delivered %v, want %v", seqs.seqs, want)
			}
			close(store.release)
			runQueued(r)
			if want := seqsTo(3); !slices.Equal(seqs.seqs, want) {
				t.Errorf("after the read returned: delivered %v, want %v (each once)", seqs.seqs, want)
			}
		})
	}
}

// fixedSubscribed is a Subscribed whose rooms' positions the test sets.
type fixedSubscribed map[string]Position

func (s fixedSubscribed) SubscribedRooms() map[string]Position { return maps.Clone(s) }

func (s fixedSubscribed) SubscribedRoom(roomID string) (Position, bool) {
	p, ok := s[roomID]
	return p, ok
}

// TestUnseenRoomStartsWhereSubscribersAre: the first message of a room the
// node has never delivered waits GapWait for the older seqs still on their
// way, and their batches are later still (a loaded machine: CI's
// TestClusterRoomAcrossNodes once lost seqs 1-3 on one node and seq 1 on
// another that way, every session of a node at the same count). Delivery
// then starts after the position of the room's local subscribers, read
// from the store, not at the held message: subscribers that listened
// from the start get every seq in order, and the late batches are
// duplicates. Only with no subscriber position known does it start at
// the held message, and a late older seq is counted as arriving before
// the start, not as a duplicate.
func TestUnseenRoomStartsWhereSubscribersAre(t *testing.T) {
	tests := []struct {
		name        string
		first       int64 // the seq that reaches the relay first
		local       bool  // this node committed it
		subscribed  fixedSubscribed
		want        []int64
		beforeStart float64
	}{
		{"remote seq 4 first, subscribers from the start", 4, false, fixedSubscribed{"r": {0, 0}}, seqsTo(4), 0},
		{"local seq 2 first, subscribers from the start", 2, true, fixedSubscribed{"r": {0, 0}}, seqsTo(2), 0},
		{"subscribers from seq 2", 4, false, fixedSubscribed{"r": {2, 3}}, []int64{3, 4}, 2},
		{"subscribers past the held seq", 4, false, fixedSubscribed{"r": {5, 5}}, []int64{4}, 3},
		{"no subscriber position known", 4, false, fixedSubscribed{}, []int64{4}, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store, local := &memStore{}, &seqLocal{}
			r := newBareRelay(t, store, local)
			r.cfg.Subscribed = tc.subscribed
			store.commit(tc.first)
			r.offer(store.event(tc.first).Message, []string{"y"}, tc.local)
			runQueued(r)
			if len(local.seqs) != 0 {
				t.Fatalf("before GapWait: delivered %v, want nothing (the room's start is unknown)", local.seqs)
			}
			r.gapTimeout("r") // the older batches are later than GapWait
			runQueued(r)
			for seq := int64(1); seq < tc.first; seq++ {
				b := parley.Batch{Node: "c", Event: store.event(seq), Recipients: []string{"y"}}
				r.receive(&b)
			}
			if !slices.Equal(local.seqs, tc.want) {
				t.Errorf("seq %d first, GapWait, then the late batches: delivered %v, want %v", tc.first, local.seqs, tc.want)
			}
			if got := testutil.ToFloat64(r.m.beforeStart); got != tc.beforeStart {
				t.Errorf("parley_cluster_before_start_total = %g, want %g", got, tc.beforeStart)
			}
		})
	}
}
