package roomevents

// The event subscriptions: a room's (/topic/rooms.{id}.events) and a
// user's personal queue (/user/queue/events), in one subindex.Index each,
// guarded by Events.mu.

import "sync/atomic"

// Receiver is the consumer of one event subscription. Its methods
// run under Events.mu: they must not block nor call back into Events.
type Receiver interface {
	// DeliverEvents hands over events, in order; they are shared and
	// must not be changed, and the slice is only valid during the call. A
	// receiver that cannot take them deals with the overflow itself (the
	// gateway closes its session as a slow consumer).
	DeliverEvents(evs []*RoomEvent)
	// Evicted reports that the user was removed (reason
	// parley.LeaveRemoved) or banned (parley.LeaveBanned) from the room
	// of a room subscription; Events has dropped the subscription.
	Evicted(roomID, reason string)
	// Lagged reports that the node's event intake overflowed: Events has
	// dropped the subscription and the client must be told.
	Lagged()
}

// Sub is one event subscription. The caller fills the exported
// fields and passes it to Events.Subscribe.
type Sub struct {
	To     Receiver
	UserID string // the subscriber
	RoomID string // the room of /topic/rooms.{id}.events; "" for /user/queue/events
	// Hold keeps the events for the subscription from its receiver from
	// Subscribe until Start: its caller checks membership in between (a
	// leave committed meanwhile drops the registration), and a
	// non-member must get nothing of the room.
	Hold bool

	idx     int          // position in its list; -1 when not registered
	held    []*RoomEvent // events waiting for Start
	holding bool         // events go to held until Start
	lost    bool         // held overflowed: Start drops it as lagged
	floor   int64        // edited and deleted events at or below it are dropped (StartAfter)
	removed atomic.Bool
}

// maxHeld bounds the events held for a subscription until Start.
const maxHeld = 1024

// Removed reports whether Events dropped the subscription on its own (the
// user left the room, or the intake overflowed).
func (s *Sub) Removed() bool { return s.removed.Load() }

// Subscribe registers s: events for it are delivered from now on.
func (e *Events) Subscribe(s *Sub) {
	e.mu.Lock()
	defer e.mu.Unlock()
	m, key := e.rooms, s.RoomID
	if s.RoomID == "" {
		m, key = e.users, s.UserID
	}
	s.held, s.holding, s.lost, s.floor = nil, s.Hold, false, 0
	m.Add(key, s, subPos)
	e.m.subs.Inc()
}

// Start hands a subscription registered with Hold the events held for it,
// in order, and makes it live. It is a no-op for one no longer registered.
func (e *Events) Start(s *Sub) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s.idx < 0 || !s.holding {
		return
	}
	held, lost := s.held, s.lost
	s.held, s.holding, s.lost = nil, false, false
	if lost {
		e.removeLocked(s)
		s.removed.Store(true)
		s.To.Lagged()
		return
	}
	if len(held) > 0 {
		s.To.DeliverEvents(held)
	}
}

// deliverLocked hands evs to s, or holds them until Start.
func deliverLocked(s *Sub, evs []*RoomEvent) {
	if evs = s.filterLocked(evs); len(evs) == 0 {
		return
	}
	if !s.holding {
		s.To.DeliverEvents(evs)
		return
	}
	if len(s.held)+len(evs) > maxHeld {
		s.held, s.lost = nil, true
	}
	if !s.lost {
		s.held = append(s.held, evs...)
	}
}

// Unsubscribe removes s; a no-op if it is not registered.
func (e *Events) Unsubscribe(s *Sub) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.removeLocked(s)
}

// subPos is a Sub's position in its subindex list.
func subPos(s *Sub) *int { return &s.idx }

// removeLocked takes s out of its list (subindex.Index.Remove).
func (e *Events) removeLocked(s *Sub) {
	m, key := e.rooms, s.RoomID
	if s.RoomID == "" {
		m, key = e.users, s.UserID
	}
	if !m.Remove(key, s, subPos) {
		return
	}
	s.held = nil
	e.m.subs.Dec()
}

// dropAll drops every subscription as lagged, after an intake overflow.
func (e *Events) dropAll() {
	e.mu.Lock()
	defer e.mu.Unlock()
	var all []*Sub
	for _, l := range e.rooms {
		all = append(all, l...)
	}
	for _, l := range e.users {
		all = append(all, l...)
	}
	for _, s := range all {
		e.removeLocked(s)
		s.removed.Store(true)
		s.To.Lagged()
	}
}

func (e *Events) hasSubs() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.rooms) > 0 || len(e.users) > 0
}

func (e *Events) hasUserSubs() bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.users) > 0
}
