package roomevents

// Typing events: throttled per user and room at the intake (letTyping),
// capped by room size on the dispatcher (typing), and batched per room
// for TypingBatch so that a subscriber gets them in one hand-off.

import (
	"encoding/json"

	"parley"
)

// DefaultTypingMaxMembers is the largest room with typing events, by
// default: the size up to which read events are sent too. Past it "… is
// typing" is noise more than news, and one typist would cost a delivery to
// every member every 2 s.
const DefaultTypingMaxMembers = 100

// Typing takes a typing signal of a member on this node (the caller has
// checked membership). More than one per TypingEvery is absorbed.
func (e *Events) Typing(roomID, userID string) {
	if e.letTyping(roomID, userID) {
		e.enqueue(evItem{kind: itemTyping, room: roomID, user: userID}, true)
	}
}

// TypingAbsorbed reports whether a typing signal of userID in roomID now
// would be absorbed by the throttle (one was let in less than TypingEvery
// ago), and counts it absorbed if so. The gateway asks before it checks
// membership, and drops such a signal unchecked: it would make no event
// anyway, and a flood of them then costs no lookup.
func (e *Events) TypingAbsorbed(roomID, userID string) bool {
	now := e.cfg.Now()
	e.tmu.Lock()
	last, ok := e.typed[roomID+"\x00"+userID]
	e.tmu.Unlock()
	if ok && now.Sub(last) < e.cfg.TypingEvery {
		e.m.absorbed.Inc()
		return true
	}
	return false
}

// letTyping is the typing throttle, at the intake: it reports whether a
// signal of userID in roomID makes an event (none for TypingEvery after
// the last), and absorbs it otherwise.
func (e *Events) letTyping(roomID, userID string) bool {
	now := e.cfg.Now()
	key := roomID + "\x00" + userID
	e.tmu.Lock()
	defer e.tmu.Unlock()
	if last, ok := e.typed[key]; ok && now.Sub(last) < e.cfg.TypingEvery {
		e.m.absorbed.Inc()
		return false
	}
	e.typed[key] = now
	if len(e.typed) >= e.typedAt {
		for k, t := range e.typed {
			if now.Sub(t) >= e.cfg.TypingEvery {
				delete(e.typed, k)
			}
		}
		e.typedAt = max(1024, 2*len(e.typed))
	}
	return true
}

// typing sends a typing event that passed the throttle (letTyping), but
// in a room of more than TypingMaxMembers members (checked here, on the
// dispatcher, from the members cache: the intake stays a map lookup).
func (e *Events) typing(roomID, userID string, remote bool) {
	ids, err := e.members(roomID)
	if err != nil || len(ids) > e.cfg.TypingMaxMembers {
		e.m.typingCapped.Inc()
		return
	}
	if !remote && e.cfg.OnTyping != nil {
		e.cfg.OnTyping(roomID, userID)
	}
	if !e.hasSubs() {
		return
	}
	body, _ := json.Marshal(struct {
		Room string `json:"room"`
		User string `json:"user"`
	}{roomID, userID})
	re := &RoomEvent{ID: parley.NewID(), Kind: KindTyping, RoomID: roomID, Headers: [][2]string{{"user", userID}}, Body: body, from: userID}
	if e.cfg.TypingBatch < 0 {
		if !e.hasUserSubs() {
			ids = nil
		}
		e.toMembers(re, ids, userID)
		return
	}
	waiting := e.typingWait[roomID]
	e.typingWait[roomID] = append(waiting, re)
	if len(waiting) == 0 {
		e.cfg.AfterFunc(e.cfg.TypingBatch, func() { e.enqueue(evItem{kind: itemTypingFlush, room: roomID}, false) })
	}
}

// flushTyping hands a room's waiting typing events to its subscribers,
// each getting all of them but its own in one call.
func (e *Events) flushTyping(roomID string) {
	evs := e.typingWait[roomID]
	delete(e.typingWait, roomID)
	if len(evs) == 0 {
		return
	}
	var members []string
	if e.hasUserSubs() {
		var err error
		if members, err = e.members(roomID); err != nil {
			return
		}
	}
	n := 0
	share := func(s *Sub) {
		own := e.own[:0]
		for _, ev := range evs {
			if ev.from != s.UserID {
				own = append(own, ev)
			}
		}
		if len(own) > 0 {
			deliverLocked(s, own)
			n += len(own)
		}
		clear(own)
		e.own = own
	}
	e.mu.Lock()
	for _, s := range e.rooms[roomID] {
		share(s)
	}
	for _, u := range members {
		for _, s := range e.users[u] {
			share(s)
		}
	}
	e.mu.Unlock()
	e.m.events.WithLabelValues(KindTyping).Add(float64(len(evs)))
	e.m.fanout.Add(float64(n))
}
