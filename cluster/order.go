package cluster

import (
	"context"
	"slices"
	"time"

	"parley"
)

// roomState is what the run goroutine knows of one room's deliveries.
type roomState struct {
	next  int64                 // the seq to deliver next; 0 until known
	held  map[int64]heldMessage // newer messages waiting for a gap to close
	timer *time.Timer           // armed while held is not empty
	since time.Time             // when the oldest gap opened
	used  time.Time             // last activity, for eviction
}

type heldMessage struct {
	msg        parley.Message
	recipients []string
}

// offer delivers m now if it is the next of its room, holds it if it is
// early, and drops it if it was delivered already.
func (r *Relay) offer(m parley.Message, recipients []string) {
	st := r.rooms[m.RoomID]
	now := time.Now()
	if st == nil {
		r.evict()
		st = &roomState{}
		r.rooms[m.RoomID] = st
	}
	st.used = now
	if st.next == 0 && m.Seq == 1 {
		st.next = 1
	}
	switch {
	case st.next != 0 && m.Seq < st.next:
		r.m.duplicates.Inc()
		return
	case st.next == 0 || m.Seq > st.next:
		if _, ok := st.held[m.Seq]; ok {
			r.m.duplicates.Inc()
			return
		}
		if st.held == nil {
			st.held = map[int64]heldMessage{}
		}
		st.held[m.Seq] = heldMessage{m, recipients}
		r.m.held.Inc()
		r.armLocked(m.RoomID, st, now)
		return
	}
	r.deliver(st, m, recipients)
	r.drain(m.RoomID, st)
}

func (r *Relay) deliver(st *roomState, m parley.Message, recipients []string) {
	r.cfg.Local.Deliver(m, recipients)
	st.next = m.Seq + 1
}

// drain delivers the held messages that have become next.
func (r *Relay) drain(roomID string, st *roomState) {
	for {
		h, ok := st.held[st.next]
		if !ok {
			break
		}
		delete(st.held, st.next)
		r.m.held.Dec()
		r.deliver(st, h.msg, h.recipients)
	}
	// Anything held below next is a duplicate by now.
	for seq := range st.held {
		if seq < st.next {
			delete(st.held, seq)
			r.m.held.Dec()
			r.m.duplicates.Inc()
		}
	}
	if len(st.held) == 0 && st.timer != nil {
		st.timer.Stop()
		st.timer = nil
	}
}

// armLocked starts the room's gap timer unless it runs.
func (r *Relay) armLocked(roomID string, st *roomState, now time.Time) {
	if st.timer != nil {
		return
	}
	st.since = now
	st.timer = time.AfterFunc(r.cfg.GapWait, func() { r.enqueue(item{tick: roomID}) })
}

// gapTimeout runs when a room has held messages for GapWait: the gap is
// read from the store (or, for a room first seen, delivery starts at the
// oldest held message).
func (r *Relay) gapTimeout(roomID string) {
	st := r.rooms[roomID]
	if st == nil {
		return
	}
	st.timer = nil
	if len(st.held) == 0 {
		return
	}
	lowest := int64(-1)
	for seq := range st.held {
		if lowest < 0 || seq < lowest {
			lowest = seq
		}
	}
	switch {
	case st.next == 0:
		st.next = lowest
	case lowest-st.next > maxFill:
		r.m.skipped.Add(float64(lowest - st.next))
		st.next = lowest
	default:
		r.fill(roomID, st, lowest)
	}
	r.drain(roomID, st)
	if len(st.held) > 0 {
		r.armLocked(roomID, st, time.Now())
	}
}

// maxFill is the widest gap fill reads from the store, in pages of
// parley.MaxPageLimit. A node whose own commits race ahead of the other
// nodes' batches (a slow broker, a busy room) opens gaps of hundreds of
// messages that the store has; a wider gap (a long outage) is left to the
// clients, which see it and fill it with since-seq.
const maxFill = 10 * parley.MaxPageLimit

// fill reads the messages from next to lowest-1 from the store, a page at
// a time, and delivers them. If the store fails or lacks them for long, the
// gap is skipped.
func (r *Relay) fill(roomID string, st *roomState, lowest int64) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	members := r.route(roomID).members
	for st.next < lowest {
		want := int(min(lowest-st.next, parley.MaxPageLimit))
		msgs, err := r.cfg.Store.Messages(ctx, roomID, parley.Page{After: st.next - 1, Limit: want})
		if err != nil {
			r.log.Error("cluster: fill gap", "room", roomID, "err", err)
			break
		}
		from := st.next
		for _, m := range msgs {
			if m.Seq == st.next && m.Seq < lowest {
				r.m.filled.Inc()
				r.deliver(st, m, members)
			}
		}
		if st.next-from < int64(want) {
			break // the store does not have them all (yet)
		}
	}
	// Still short: the store failed, or does not have them yet (another
	// node's commit can be visible to its own node before ours reads it).
	// The gap timer retries; after 20 × GapWait the gap is skipped.
	if st.next < lowest && time.Since(st.since) > 20*r.cfg.GapWait {
		r.m.skipped.Add(float64(lowest - st.next))
		st.next = lowest
	}
}

// evict makes room for one more room state when Config.MaxRooms are kept:
// it forgets the least recently used tenth of the rooms holding nothing.
// A forgotten room's next message waits GapWait, as a room never seen does,
// so rooms are forgotten by number, not by age: a quiet 1:1 chat whose
// messages come an hour apart keeps its place and is never held back.
//
// When most rooms hold messages (a storm of rooms first seen) a pass frees
// less than a tenth; the next one waits until the map has grown by another
// tenth (evictAt), so that a pass over every room is not paid per new room.
func (r *Relay) evict() {
	if len(r.rooms) < max(r.cfg.MaxRooms, r.evictAt) {
		return
	}
	defer func() { r.evictAt = len(r.rooms) + max(1, r.cfg.MaxRooms/10) }()
	type idle struct {
		id   string
		used time.Time
	}
	var idles []idle
	for id, st := range r.rooms {
		if len(st.held) == 0 {
			idles = append(idles, idle{id, st.used})
		}
	}
	slices.SortFunc(idles, func(a, b idle) int { return a.used.Compare(b.used) })
	for _, i := range idles[:min(len(idles), max(1, r.cfg.MaxRooms/10))] {
		delete(r.rooms, i.id)
	}
}
