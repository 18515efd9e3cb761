package roomevents

// Edited and deleted events (design §4 "Room events"): each edit or
// deletion the store commits (parley.EventEdited, parley.EventDeleted) is
// an event of its room, header change (the room's change number) and seq,
// body the message in its new version as REST shows it. A subscription
// that resumes with since-change reads the changes it missed from the
// store (ChangeEvent of each), then goes live with StartAfter: the live
// changes at or below the last one it read are dropped, so it gets each
// change once, with no gap.

import (
	"encoding/json"
	"strconv"

	"parley"
)

// ChangeEvent returns the edited or deleted event of m, a message in its
// new version (a tombstone makes a deleted event).
func ChangeEvent(m *parley.Message) *RoomEvent {
	kind := KindEdited
	if m.Deleted() {
		kind = KindDeleted
	}
	body, _ := json.Marshal(m)
	return &RoomEvent{
		ID: parley.NewID(), Kind: kind, RoomID: m.RoomID, Body: body, change: m.Change,
		Headers: [][2]string{{"change", strconv.FormatInt(m.Change, 10)}, {"seq", strconv.FormatInt(m.Seq, 10)}},
	}
}

// Change returns the change number of an edited or deleted event, 0 for
// any other.
func (e *RoomEvent) Change() int64 { return e.change }

// StartAfter is Start for a subscription that has read the room's changes
// up to change after from the store: of the events held for it, and of
// every later one, the edited and deleted events at or below after are
// dropped (they were committed before the read and reached Events after
// it). The other events are untouched.
func (e *Events) StartAfter(s *Sub, after int64) {
	e.mu.Lock()
	s.floor = after
	if s.idx >= 0 && s.holding {
		s.held = s.filterLocked(s.held)
	}
	e.mu.Unlock()
	e.Start(s)
}

// filterLocked returns evs without the changes at or below s.floor,
// reusing evs' array when something is dropped.
func (s *Sub) filterLocked(evs []*RoomEvent) []*RoomEvent {
	if s.floor <= 0 {
		return evs
	}
	keep := -1
	for i, ev := range evs {
		if ev.change != 0 && ev.change <= s.floor {
			keep = i
			break
		}
	}
	if keep < 0 {
		return evs // the common case: nothing to drop, nothing copied
	}
	out := make([]*RoomEvent, 0, len(evs)-1)
	for _, ev := range evs {
		if ev.change == 0 || ev.change > s.floor {
			out = append(out, ev)
		}
	}
	return out
}
