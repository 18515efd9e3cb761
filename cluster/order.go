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
	stuck time.Time             // since when catching up has made no progress; zero while it does
	used  time.Time             // last activity, for eviction
	// start is where delivery began in a room whose start was not known
	// (catchUp, startAt): an older seq arriving later was never delivered
	// here (parley_cluster_before_start_total), not a duplicate.
	start int64
	// reading is set while a read of the gap below the held messages is
	// on its way (readGap); one at a time per room.
	reading bool
}

type heldMessage struct {
	msg        parley.Message
	recipients []string
	at         time.Time // when it was held
}

// offer delivers m now if it is the next of its room, holds it if it is
// early, and drops it if it was delivered already. An early message in a
// room it delivers is never left waiting for the gap timer, whether this
// node committed it (local) or another node did: its commit proves that
// the store has every older seq of the room (the commit of seq n held the
// room's lock after the commits of 1..n-1 had ended), so the gap is read
// from the store at once, beside the batches still on their way
// (readGap): what comes first closes it.
func (r *Relay) offer(m parley.Message, recipients []string, local bool) {
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
		if m.Seq < st.start {
			r.m.beforeStart.Inc()
		} else {
			r.m.duplicates.Inc()
		}
		return
	case st.next == 0 || m.Seq > st.next:
		if _, ok := st.held[m.Seq]; ok {
			r.m.duplicates.Inc()
			return
		}
		if st.held == nil {
			st.held = map[int64]heldMessage{}
		}
		st.held[m.Seq] = heldMessage{m, recipients, now}
		r.m.held.Inc()
		r.m.holds.Inc()
		r.armGapTimer(m.RoomID, st, now)
		if st.next != 0 {
			// In a room never seen (next 0) the gap's start is unknown:
			// its first message waits for GapWait.
			reason := "remote"
			if local {
				reason = "local"
			}
			r.readGap(m.RoomID, st, reason)
		}
		return
	}
	how := "remote"
	if local {
		how = "local"
	}
	r.deliver(st, m, recipients, how)
	r.drain(m.RoomID, st)
}

// deliver hands m to the local fan-out; how it came is the delivery
// metric's label: at once from this node's commit (local) or from a batch
// (remote), after waiting behind a gap (held), or read from the store
// before any batch brought it (store).
func (r *Relay) deliver(st *roomState, m parley.Message, recipients []string, how string) {
	r.cfg.Local.Deliver(m, recipients)
	st.next = m.Seq + 1
	if !m.SentAt.IsZero() {
		r.m.delivery.WithLabelValues(how).Observe(time.Since(m.SentAt).Seconds())
	}
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
		r.m.holdTime.Observe(time.Since(h.at).Seconds())
		r.deliver(st, h.msg, h.recipients, "held")
	}
	// Anything held below next is a duplicate by now.
	for seq := range st.held {
		if seq < st.next {
			delete(st.held, seq)
			r.m.held.Dec()
			r.m.duplicates.Inc()
		}
	}
	if len(st.held) == 0 {
		st.stuck = time.Time{}
		if st.timer != nil {
			st.timer.Stop()
			st.timer = nil
		}
	}
}

// readGap starts a read of the room's gap below its newest held message
// from the store, unless one is on its way: the held messages are
// committed, so the store has every seq below them. The read runs on a
// goroutine of its own, so that the relay goes on delivering meanwhile
// (the missing batches may arrive first), and hands its page back through
// the queue (gapRead). A page that does not bring the next seq leaves the
// gap to the gap timer.
func (r *Relay) readGap(roomID string, st *roomState, reason string) {
	if st.reading || st.next == 0 || len(st.held) == 0 {
		return
	}
	upTo := highestHeld(st) - 1
	if st.next > upTo {
		return
	}
	st.reading = true
	r.m.fills.WithLabelValues(reason).Inc()
	after, limit := st.next-1, int(min(upTo-st.next+1, parley.MaxPageLimit))
	r.reads.Add(1)
	go func() {
		defer r.reads.Done()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		msgs, err := r.cfg.Store.Messages(ctx, roomID, parley.Page{After: after, Limit: limit})
		cancel()
		r.enqueue(item{gap: &gapPage{room: roomID, msgs: msgs, err: err, reason: reason}})
	}()
}

// gapPage is what a read of readGap brought.
type gapPage struct {
	room   string
	msgs   []parley.Message
	err    error
	reason string
}

// gapRead delivers what a read of readGap brought that is still missing,
// with the held messages it reaches, and reads on while a gap is left
// below the held messages and the page brought the next seq.
func (r *Relay) gapRead(p *gapPage) {
	st := r.rooms[p.room]
	if st == nil {
		return
	}
	st.reading = false
	if p.err != nil {
		r.log.Error("cluster: read gap", "room", p.room, "err", p.err)
		return // the gap timer reads it again
	}
	if st.next == 0 {
		return // forgotten meanwhile (evict): its start is unknown again
	}
	from := st.next
	var members []string
	for _, m := range p.msgs {
		if m.Seq != st.next {
			continue
		}
		how := r.release(st, m.Seq)
		if members == nil {
			members = r.route(p.room).members
		}
		r.deliver(st, m, members, how)
		r.drain(p.room, st)
	}
	if st.next > from {
		r.readGap(p.room, st, p.reason)
	}
}

func highestHeld(st *roomState) int64 {
	var highest int64
	for seq := range st.held {
		highest = max(highest, seq)
	}
	return highest
}

// armGapTimer starts the room's gap timer unless it runs.
func (r *Relay) armGapTimer(roomID string, st *roomState, now time.Time) {
	if st.timer != nil {
		return
	}
	st.timer = time.AfterFunc(r.cfg.GapWait, func() { r.enqueue(item{tick: roomID}) })
}

// gapTimeout runs when a room has held messages for GapWait: every gap up
// to the newest held message is read from the store (or, for a room first
// seen, delivery starts at the oldest held message).
func (r *Relay) gapTimeout(roomID string) {
	st := r.rooms[roomID]
	if st == nil {
		return
	}
	st.timer = nil
	if len(st.held) == 0 {
		return
	}
	r.catchUp(roomID, st, "timer")
}

// catchUp closes every gap below the room's newest held message: it reads
// from the store what is missing, a page at a time, delivering it and the
// held messages it reaches, and keeps going while each page brings the
// next seq. What stays held waits for the gap timer; a gap that 20 ×
// GapWait of retries could not narrow is skipped (clients see it and fill
// it with since-seq).
//
// In a room first seen (its first message waited GapWait for older ones
// still on their way), delivery starts after the position of the room's
// local topic subscribers (Config.Subscribed, startAt), so that batches
// later than GapWait lose them nothing: the held message's commit proves
// that the store has every older seq. Only when no position is known does
// it start at the oldest held message.
func (r *Relay) catchUp(roomID string, st *roomState, reason string) {
	if len(st.held) == 0 {
		return
	}
	lowest, highest := int64(-1), int64(0)
	for seq := range st.held {
		if lowest < 0 || seq < lowest {
			lowest = seq
		}
		highest = max(highest, seq)
	}
	if st.next == 0 {
		pos, ok := r.subscribedAt(roomID)
		if !ok {
			pos.Low = lowest - 1 // nobody's start is known: the held messages'
		}
		r.startAt(roomID, st, pos)
	}
	before := st.next
	if len(st.held) > 0 && r.fill(roomID, st, highest-1, reason) {
		r.enqueue(item{tick: roomID}) // let the queued batches and commits through, then go on
	}
	switch {
	case len(st.held) == 0 || st.next > before:
		st.stuck = time.Time{}
	case st.stuck.IsZero():
		st.stuck = time.Now()
	case time.Since(st.stuck) > 20*r.cfg.GapWait:
		skip := lowestHeld(st)
		r.m.skipped.Add(float64(skip - st.next))
		st.next = skip
		st.stuck = time.Time{}
		r.drain(roomID, st)
	}
	if len(st.held) > 0 && st.timer == nil {
		r.armGapTimer(roomID, st, time.Now())
	}
}

func lowestHeld(st *roomState) int64 {
	lowest := int64(-1)
	for seq := range st.held {
		if lowest < 0 || seq < lowest {
			lowest = seq
		}
	}
	return lowest
}

// fill reads the room's messages from next up to upTo from the store, a
// page at a time, and delivers them with the held messages they reach. It
// stops when the store fails or a page does not bring the next seq (the
// store does not have it yet: another node's commit can be visible to that
// node before ours reads it), or when it has read maxFillPages: then more
// is set, and the caller has it go on after the relay's queue.
func (r *Relay) fill(roomID string, st *roomState, upTo int64, reason string) (more bool) {
	if st.next == 0 || st.next > upTo {
		return false
	}
	r.m.fills.WithLabelValues(reason).Inc()
	members := r.route(roomID).members
	pages := 0
	for st.next <= upTo {
		want := int(min(upTo-st.next+1, parley.MaxPageLimit))
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		msgs, err := r.cfg.Store.Messages(ctx, roomID, parley.Page{After: st.next - 1, Limit: want})
		cancel()
		if err != nil {
			r.log.Error("cluster: fill gap", "room", roomID, "err", err)
			return false
		}
		from := st.next
		for _, m := range msgs {
			if m.Seq == st.next && m.Seq <= upTo {
				r.deliver(st, m, members, r.release(st, m.Seq))
			}
		}
		r.drain(roomID, st)
		if st.next == from {
			return false // the store does not have the next seq (yet)
		}
		if pages++; pages == maxFillPages && st.next <= upTo {
			return true
		}
	}
	return false
}

// maxFillPages bounds the history pages one fill reads before the relay
// turns to its queue; the fill goes on right after (a queued tick).
const maxFillPages = 20

// evict makes room for one more room state when Config.MaxPositions are kept:
// it forgets the least recently used tenth of the rooms holding nothing.
// A forgotten room's next message waits GapWait, as a room never seen does,
// so rooms are forgotten by number, not by age: a quiet 1:1 chat whose
// messages come an hour apart keeps its place and is never held back.
//
// When most rooms hold messages (a storm of rooms first seen) a pass frees
// less than a tenth; the next one waits until the map has grown by another
// tenth (evictAt), so that a pass over every room is not paid per new room.
func (r *Relay) evict() {
	if len(r.rooms) < max(r.cfg.MaxPositions, r.evictAt) {
		return
	}
	defer func() { r.evictAt = len(r.rooms) + max(1, r.cfg.MaxPositions/10) }()
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
	for _, i := range idles[:min(len(idles), max(1, r.cfg.MaxPositions/10))] {
		delete(r.rooms, i.id)
	}
}

// release takes a message read from the store out of the room's held
// ones, if its batch had come: "held" then, "store" (a fill) otherwise,
// as parley_cluster_delivery_seconds labels it.
func (r *Relay) release(st *roomState, seq int64) string {
	h, ok := st.held[seq]
	if !ok {
		r.m.filled.Inc()
		return "store"
	}
	delete(st.held, seq)
	r.m.held.Dec()
	r.m.holdTime.Observe(time.Since(h.at).Seconds())
	return "held"
}
