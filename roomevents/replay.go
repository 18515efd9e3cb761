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

// ChangeEvent returns the event that replays m, a changed message in its
// current version: deleted for a tombstone, edited for an edited message,
// reaction for one that was never edited (its change was a reaction). A
// replayed reaction event has no user, emoji and action headers: it
// carries the message's counts as they are now, as a replayed edit
// carries the current text.
func ChangeEvent(m *parley.Message) *RoomEvent {
	kind := KindEdited
	switch {
	case m.Deleted():
		kind = KindDeleted
	case m.EditedAt == nil:
		kind = KindReaction
	}
	body, _ := json.Marshal(m)
	return &RoomEvent{
		ID: parley.NewID(), Kind: kind, RoomID: m.RoomID, Body: body, change: m.Change,
		Headers: [][2]string{{"change", strconv.FormatInt(m.Change, 10)}, {"seq", strconv.FormatInt(m.Seq, 10)}},
	}
}

// ReactionEvent returns the live reaction event of ev (an EventReaction):
// headers change, seq, user, emoji and action (parley.ReactionAdded or
// parley.ReactionRemoved), body the message in its new version, its
// reactions' counts with me false (each client knows its own: it is the
// user of the events it caused).
func ReactionEvent(ev *parley.Event) *RoomEvent {
	m := &ev.Message
	body, _ := json.Marshal(m)
	return &RoomEvent{
		ID: parley.NewID(), Kind: KindReaction, RoomID: m.RoomID, Body: body, change: m.Change,
		Headers: [][2]string{{"change", strconv.FormatInt(m.Change, 10)}, {"seq", strconv.FormatInt(m.Seq, 10)},
			{"user", ev.UserID}, {"emoji", ev.Emoji}, {"action", ev.Reason}},
	}
}

// Change returns the change number of an edited, deleted or reaction
// event, 0 for any other.
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
