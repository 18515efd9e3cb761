package hub

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"parley"
)

// Receiver is the consumer of one subscription: in the gateway, a session's
// subscription, which queues frames for its socket. The Hub calls its
// methods with its lock held, from the dispatch goroutine or from Start, so
// they must not block and must not call back into the Hub.
type Receiver interface {
	// Deliver hands over consecutive messages of one room, in seq order
	// (within a room, every call continues the previous one). The slice is
	// only valid during the call. A receiver that cannot take them (its
	// queue is full) deals with the overflow itself, typically by closing
	// its session.
	Deliver(ms []*Message)
	// Lagged reports that live messages arrived faster than the
	// subscription could catch up on history: more than
	// Config.MaxBuffered of them were waiting. The Hub has dropped the
	// subscription; the receiver must tell its client.
	Lagged()
}

// Evicter is implemented by a Receiver whose client must learn that its
// user was removed (reason parley.LeaveRemoved) or banned
// (parley.LeaveBanned) from the room: the Hub has dropped the
// subscription. It is called under the Hub's lock, like Receiver's methods.
type Evicter interface {
	Evicted(roomID, reason string)
}

// Sub is one subscription as the Hub knows it. The caller fills the exported
// fields and passes it to Subscribe; the Hub owns the rest.
type Sub struct {
	To     Receiver
	UserID string // the subscriber
	RoomID string // the room of a topic subscription; "" for the personal queue

	idx       int        // position in h.rooms[RoomID] or h.users[UserID]; -1 when not registered
	buffering bool       // live messages go to buf until Start merges them
	buf       []*Message // live messages held back during the catch-up
	sent      int64      // room subscriptions: the last seq handed to the receiver (history or live); later ones at or below it are duplicates
	placed    bool       // room subscriptions: sent is known (a since-seq start, or something handed over)
	from      int64      // live-only room subscriptions (LiveAfter): the room's last seq when it subscribed; -1 when unknown
	removed   atomic.Bool
}

// Removed reports whether the Hub dropped the subscription on its own
// because the user left the room (or it lagged).
func (s *Sub) Removed() bool { return s.removed.Load() }

// Subscribe registers s. Until Start is called, live messages for s are
// held back, so that whatever the caller does in between (check
// membership, read history) cannot race with the dispatcher.
func (h *Hub) Subscribe(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	s.buffering = true
	s.buf = nil
	s.sent = 0
	s.placed = false
	s.from = -1
	if s.RoomID != "" {
		h.rooms.Add(s.RoomID, s, subPos)
		h.nsubs[0]++
	} else {
		h.users.Add(s.UserID, s, subPos)
		h.nsubs[1]++
	}
	h.updateGaugesLocked()
}

// Unsubscribe removes s. It is a no-op if s is not registered.
func (h *Hub) Unsubscribe(s *Sub) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.removeLocked(s)
}

// subPos is a Sub's position in its subindex list.
func subPos(s *Sub) *int { return &s.idx }

// removeLocked takes s out of its list (subindex.Index.Remove).
func (h *Hub) removeLocked(s *Sub) {
	m, key, kind := h.rooms, s.RoomID, 0
	if s.RoomID == "" {
		m, key, kind = h.users, s.UserID, 1
	}
	if !m.Remove(key, s, subPos) {
		return
	}
	s.buf = nil
	h.nsubs[kind]--
	h.updateGaugesLocked()
}

// sendLocked hands ms (consecutive messages of one room) to s, or holds
// them back while s catches up.
func (h *Hub) sendLocked(s *Sub, ms []*Message) {
	if !s.buffering {
		for len(ms) > 0 && ms[0].Seq <= s.sent {
			ms = ms[1:]
		}
		if len(ms) > 0 {
			s.To.Deliver(ms)
			if s.RoomID != "" {
				s.sent, s.placed = ms[len(ms)-1].Seq, true
			}
		}
		return
	}
	if len(s.buf)+len(ms) > h.maxBuffered {
		h.removeLocked(s)
		s.removed.Store(true)
		h.m.lagged.Inc()
		s.To.Lagged()
		return
	}
	s.buf = append(s.buf, ms...)
}

// History reads one page of a room's history: messages with seq > after,
// oldest first, as many as the store gives in one page. An empty page means
// there is nothing after after.
type History func(ctx context.Context, after int64) ([]parley.Message, error)

// Send hands one history message to the subscriber, waiting for room in its
// queue if need be; it fails when ctx ends or the subscriber is gone.
type Send func(ctx context.Context, m *Message) error

// Start makes a subscription registered with Subscribe live. With after >= 0
// it first sends every stored message with seq > after, read with history
// and handed over with send, then the live messages held back since
// Subscribe that are newer than the last one sent, then lets the dispatcher
// deliver directly: no gap, no duplicate, in seq order. With after < 0 it
// only releases the messages held back. Start is called once per
// subscription, from the subscriber's goroutine, never the dispatcher's.
//
// A room subscription only: the personal queue has no seq of its own, and
// Start with after < 0 is the only use for it.
func (h *Hub) Start(ctx context.Context, s *Sub, after int64, history History, send Send) error {
	if after < 0 {
		h.release(s, &after, true)
		return nil
	}
	for {
		page, err := history(ctx, after)
		if err != nil {
			return fmt.Errorf("read history: %w", err)
		}
		for i := range page {
			if page[i].Seq <= after {
				continue
			}
			if s.Removed() {
				return errRemoved
			}
			if err := send(ctx, NewMessage(page[i], time.Time{})); err != nil {
				return err
			}
			after = page[i].Seq
		}
		// Once the held-back messages continue the history without a gap,
		// or the history is exhausted, the subscription can go live.
		if h.release(s, &after, len(page) == 0) {
			return nil
		}
	}
}

// LiveAfter notes that a live-only room subscription registered with
// Subscribe (and to be started with Start, after < 0) wants every seq
// after last, the room's last seq as the caller read it after Subscribe:
// any seq committed later is live for it. Until it is handed a message,
// Rooms reports it there, so that the cluster relay, delivering a room it
// has never seen, knows where to start for it (cluster.Subscribed)
// instead of at whatever message reached the node first.
func (h *Hub) LiveAfter(s *Sub, last int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.idx >= 0 && s.RoomID != "" && last >= 0 {
		s.from = last
	}
}

// errRemoved is returned by Start when the Hub dropped the subscription
// during the catch-up.
var errRemoved = errors.New("subscription removed during catch-up")

// release delivers the messages s held back that are newer than *after and
// makes s live, and returns true; unless (with after >= 0) the first of them
// is not the next seq after *after, or none is held back and the history is
// not exhausted: then it keeps them held back and returns false.
func (h *Hub) release(s *Sub, after *int64, exhausted bool) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.idx < 0 {
		return true // removed meanwhile: nothing to release
	}
	i := 0
	if *after >= 0 {
		for i < len(s.buf) && s.buf[i].Seq <= *after {
			i++
		}
		s.buf = s.buf[i:]
		i = 0
		if len(s.buf) == 0 && !exhausted || len(s.buf) > 0 && s.buf[0].Seq != *after+1 {
			return false
		}
	}
	if len(s.buf) > 0 {
		s.To.Deliver(s.buf)
		*after = s.buf[len(s.buf)-1].Seq
	}
	s.buf = nil
	s.buffering = false
	// A message committed before Subscribe may still be on its way from
	// the dispatcher after the history showed it: it must not come twice.
	// The personal queue carries every room's seqs and merges no history:
	// nothing of it is a duplicate by seq.
	if s.RoomID != "" {
		s.sent = max(*after, 0)
		s.placed = *after >= 0
	}
	return true
}

// Position is where the topic subscriptions of a room on this node are:
// the lowest and the highest of the last seqs handed to each of them.
type Position struct {
	Low, High int64
}

// Rooms returns the position of each room with topic subscriptions whose
// last seq is known: live ones that started from a since-seq or have been
// handed a message, and live-only ones given LiveAfter, at the room's
// last seq when they subscribed until they are handed a message. A
// subscription still catching up on history is left out (it reads up to
// the room's last seq by itself), and so is a live-only one without
// LiveAfter that has had nothing yet (it wants what is committed from now
// on, and the hub does not know where that starts). The cluster relay reads
// it to fill from the store a room whose first messages never reached
// this node, or reached it late.
func (h *Hub) Rooms() map[string]Position {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make(map[string]Position, len(h.rooms))
	for room, subs := range h.rooms {
		if pos, ok := positionOf(subs); ok {
			out[room] = pos
		}
	}
	return out
}

// Room returns the position of one room's topic subscriptions, as Rooms
// does; ok is false when none is known.
func (h *Hub) Room(roomID string) (pos Position, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return positionOf(h.rooms[roomID])
}

// positionOf is the lowest and the highest known position of subs; the
// hub's lock is held.
func positionOf(subs []*Sub) (pos Position, ok bool) {
	for _, s := range subs {
		at := s.sent
		switch {
		case s.from >= 0 && !s.placed: // live-only, started or not: it wants what follows from
			at = s.from
		case s.buffering || !s.placed:
			continue
		}
		if !ok {
			pos, ok = Position{at, at}, true
			continue
		}
		pos.Low, pos.High = min(pos.Low, at), max(pos.High, at)
	}
	return pos, ok
}
