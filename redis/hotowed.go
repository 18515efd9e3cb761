package redis

import (
	"context"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// # What a failed write owes
//
// A write of the applier that fails (Redis unreachable, a round trip past
// HotConfig.Timeout) leaves keys behind their commits. The invalidations
// of joins and leaves are retried on their own (retryLater). The rest of
// what the write owed is kept in an owed set and replayed at the start of
// every later write until one succeeds; the retry goroutine starts such a
// write on a node whose rooms went quiet, so that a room whose newest
// messages were lost on their way to Redis does not stay behind for a TTL
// (TestHotMessageWriteRetried). Every part is idempotent and moves a key
// forward or drops it, so a replay after later writes brings back nothing
// they replaced:
//
//   - a room's newest message (scriptLast keeps the higher seq). The window
//     is not replayed: a window whose top is below the last message is a
//     miss and is reloaded from the store, so the last message alone
//     repairs it;
//   - a member's read position, raised by a read or their own message
//     (scriptRaise raises only);
//   - a message's newest change (scriptLastChange and scriptWindowChange
//     apply a higher change number only);
//   - the drop of a room's window and last message that a thread root's
//     edit or deletion makes (its replies show its old text), kept apart
//     from the change: a later change of the root (a reaction) replaces
//     the owed change, and does not drop them. Replayed after the rest, so
//     an owed reply of an older text goes too (and what later writes
//     stored there, which costs the next read a reload).
//
// A change to a message whose send is owed updates the owed copy, and a
// change another node wrote first stays (scriptLastChange stores it above
// an older last message), so a replay never brings back a text that was
// edited or deleted. Each kind
// is bounded (maxOwed entries); past that a key stays behind until its
// TTL, as before, and the drop is logged.
type owed struct {
	last    map[string]owedLast      // room → its newest message
	raises  map[[2]string]int64      // user, room → read seq
	changes map[owedSeq]parley.Event // a changed message → its newest change's event
	forgets map[string]struct{}      // rooms whose window and last message go
	dropped int                      // entries refused past maxOwed
}

// maxOwed bounds each kind of owed entry.
const maxOwed = 100_000

type owedLast struct {
	m        parley.Message
	activity time.Time // the room's LastActivityAt with m
}

type owedSeq struct {
	room string
	seq  int64
}

func (o *owed) empty() bool {
	return o == nil || len(o.last) == 0 && len(o.raises) == 0 && len(o.changes) == 0 && len(o.forgets) == 0
}

// add records what the events of a failed write owed.
func (o *owed) add(batches [][]parley.Event) {
	for _, events := range batches {
		for i := range events {
			ev := &events[i]
			switch ev.Kind {
			case parley.EventRead:
				o.raise(ev.UserID, ev.Room.ID, ev.ReadSeq)
			case parley.EventMessage:
				o.message(&ev.Message, ev.Room.LastActivityAt)
				o.raise(ev.Message.SenderID, ev.Room.ID, ev.Message.Seq)
			case parley.EventEdited, parley.EventDeleted, parley.EventReaction, parley.EventThread, parley.EventPin:
				o.change(ev)
			}
		}
	}
}

// merge adds what another set owes.
func (o *owed) merge(p *owed) {
	if p == nil {
		return
	}
	for _, l := range p.last {
		o.message(&l.m, l.activity)
	}
	for k, seq := range p.raises {
		o.raise(k[0], k[1], seq)
	}
	for _, ev := range p.changes {
		o.change(&ev)
	}
	for room := range p.forgets {
		o.forget(room)
	}
	o.dropped += p.dropped
}

func (o *owed) message(m *parley.Message, activity time.Time) {
	if old, ok := o.last[m.RoomID]; ok {
		if old.m.Seq > m.Seq || old.m.Seq == m.Seq && old.m.Change >= m.Change {
			return
		}
	} else if !o.fits(len(o.last)) {
		return
	} else if o.last == nil {
		o.last = map[string]owedLast{}
	}
	o.last[m.RoomID] = owedLast{m: *m, activity: activity}
}

func (o *owed) raise(user, room string, seq int64) {
	k := [2]string{user, room}
	if old, ok := o.raises[k]; ok {
		if old < seq {
			o.raises[k] = seq
		}
		return
	}
	if !o.fits(len(o.raises)) {
		return
	}
	if o.raises == nil {
		o.raises = map[[2]string]int64{}
	}
	o.raises[k] = seq
}

func (o *owed) change(ev *parley.Event) {
	m := &ev.Message
	if forgetsWindow(ev) {
		o.forget(ev.Room.ID)
	}
	if l, ok := o.last[ev.Room.ID]; ok && l.m.Seq == m.Seq && l.m.Change < m.Change {
		o.last[ev.Room.ID] = owedLast{m: *m, activity: l.activity}
	}
	k := owedSeq{ev.Room.ID, m.Seq}
	if old, ok := o.changes[k]; ok {
		if old.Message.Change < m.Change {
			o.changes[k] = *ev
		}
		return
	}
	if !o.fits(len(o.changes)) {
		return
	}
	if o.changes == nil {
		o.changes = map[owedSeq]parley.Event{}
	}
	o.changes[k] = *ev
}

func (o *owed) forget(room string) {
	if _, ok := o.forgets[room]; ok || !o.fits(len(o.forgets)) {
		return
	}
	if o.forgets == nil {
		o.forgets = map[string]struct{}{}
	}
	o.forgets[room] = struct{}{}
}

// fits reports whether a kind holding n entries takes one more.
func (o *owed) fits(n int) bool {
	if n < maxOwed {
		return true
	}
	o.dropped++
	return false
}

// queueOwed puts the replay's scripts on pipe, before the write's own.
func (h *HotStore) queueOwed(ctx context.Context, pipe goredis.Pipeliner, o *owed, ttl string) {
	for room, l := range o.last {
		h.queueLast(ctx, pipe, room, &l.m, l.activity, ttl)
	}
	for k, seq := range o.raises {
		scriptRaise.Eval(ctx, pipe, []string{h.userKey(k[0]), h.userGen(k[0])}, k[1], strconv.FormatInt(seq, 10), ttl)
	}
	for _, ev := range o.changes {
		h.applyChange(ctx, pipe, &ev, ttl) // its invalidation is retried on its own
	}
	for room := range o.forgets {
		h.forgetWindow(ctx, pipe, room, ttl)
	}
}

// takeOwed returns what failed writes owe, leaving nothing owed.
func (h *HotStore) takeOwed() *owed {
	h.rmu.Lock()
	defer h.rmu.Unlock()
	o := h.owed
	h.owed = nil
	return o
}

// oweLater keeps what a failed write owed (o, which the caller gives up)
// for the next write, and has the retry goroutine start one.
func (h *HotStore) oweLater(o *owed) {
	if o.empty() {
		return
	}
	h.rmu.Lock()
	if h.owed == nil {
		h.owed = o
	} else {
		h.owed.merge(o)
	}
	if n := h.owed.dropped; n > 0 {
		h.owed.dropped = 0
		h.log.Warn("redis hot data: too much owed to Redis; some keys stay behind until their TTL", "dropped", n)
	}
	h.startRetriesLocked() // not kicked: its pause paces the replays
	h.rmu.Unlock()
}

// owesRedis reports whether failed writes owe anything still.
func (h *HotStore) owesRedis() bool {
	h.rmu.Lock()
	defer h.rmu.Unlock()
	return !h.owed.empty()
}

// replayOwed has the applier write what is owed, if anything is, even
// with nothing queued: the retry goroutine's call for a quiet node. It
// reports whether anything was owed.
func (h *HotStore) replayOwed() bool {
	if !h.owesRedis() {
		return false
	}
	h.replayDue.Store(true)
	select {
	case h.awake <- struct{}{}:
	default:
	}
	return true
}
