package roomevents

// Edited and deleted events (design §4 "Room events"): each edit or
// deletion the store commits (parley.EventEdited, parley.EventDeleted) is
// an event of its room, header change (the room's change number) and seq,
// body the message in its new version as REST shows it; so are reactions
// (reaction events) and a root's new thread summary (thread events),
// which take change numbers too (design §3b). A subscription
// that resumes with since-change reads the changes it missed from the
// store (ReplayEvent of each), then goes live with StartAfter: the live
// changes at or below the last one it read are dropped, so it gets each
// change once, with no gap.

import (
	"encoding/json"
	"strconv"
	"time"

	"parley"
)

// ChangeEvent returns the edited or deleted event of m, a message in its
// new version (a tombstone makes a deleted event).
func ChangeEvent(m *parley.Message) *RoomEvent {
	kind := KindEdited
	if m.Deleted() {
		kind = KindDeleted
	}
	return changeEvent(kind, m)
}

// ReplayEvent returns the event that replays m, a changed message in its
// current version (since-change): a replay carries each changed message
// once, at its last change, so its kind says what the message shows now
// rather than which change came last: deleted for a tombstone, pin for
// a message whose last change is its pin (Pinned.Change), edited for an
// edited message, else reaction when it carries reactions, thread when it
// carries a thread summary, and edited for the rest (a sender's name
// changed by an account's deletion, a message unpinned or with its last
// reaction gone). A replayed reaction, thread or pin event has only the change and seq headers (and, for a pinned
// message, pinned-by and pinned-at, as every event of one has); its body
// is the message as it is now (counts, summary, pin).
func ReplayEvent(m *parley.Message) *RoomEvent {
	kind := KindEdited
	switch {
	case m.Deleted():
		kind = KindDeleted
	case m.Pinned != nil && m.Pinned.Change == m.Change:
		kind = KindPin // its last change is its pin
	case m.EditedAt != nil:
	case len(m.Reactions) > 0:
		kind = KindReaction
	case m.Thread != nil:
		kind = KindThread
	}
	return changeEvent(kind, m)
}

// changeEvent is the event of kind of m, headers change and seq (and the
// pin's, pinHeaders, when m is pinned).
func changeEvent(kind string, m *parley.Message) *RoomEvent {
	body, _ := json.Marshal(m)
	return &RoomEvent{
		ID: parley.NewID(), Kind: kind, RoomID: m.RoomID, Body: body, change: m.Change,
		Headers: pinHeaders([][2]string{{"change", strconv.FormatInt(m.Change, 10)}, {"seq", strconv.FormatInt(m.Seq, 10)}}, m),
	}
}

// pinHeaders appends to h, when m is pinned, headers pinned-by (the user
// who pinned it) and pinned-at (RFC 3339), as the MESSAGE frames of a
// pinned message carry them (gateway).
func pinHeaders(h [][2]string, m *parley.Message) [][2]string {
	if p := m.Pinned; p != nil {
		h = append(h, [2]string{"pinned-by", p.By}, [2]string{"pinned-at", p.At.UTC().Format(time.RFC3339Nano)})
	}
	return h
}

// PinEvent returns the live pin event of ev (an EventPin): headers
// change, seq, user (who pinned or unpinned) and action (parley.PinAdded
// or parley.PinRemoved), and for a pin pinned-by and pinned-at; body the
// message in its new version (its pinned field, absent after an unpin).
func PinEvent(ev *parley.Event) *RoomEvent {
	m := &ev.Message
	re := changeEvent(KindPin, m)
	re.Headers = append(re.Headers, [2]string{"user", ev.UserID}, [2]string{"action", ev.Reason})
	return re
}

// ThreadEvent returns the live thread event of ev (an EventThread): a
// root's new summary after a reply. Headers change, seq (the root's),
// user (who replied) and replies (the count); body the root in its new
// version. It goes to every member, as other room events do: that is how
// the root's sender and everyone who replied (the thread's followers)
// learn of a new reply, whether or not they have the room open.
func ThreadEvent(ev *parley.Event) *RoomEvent {
	m := &ev.Message
	re := changeEvent(KindThread, m)
	n := 0
	if m.Thread != nil {
		n = m.Thread.Replies
	}
	re.Headers = append(re.Headers, [2]string{"user", ev.UserID}, [2]string{"replies", strconv.Itoa(n)})
	return re
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
