package webhook

import (
	"encoding/json"
	"strconv"
	"time"

	"parley"
)

// event is one delivery of a room's event: its body, and the position the
// webhook reaches once it is delivered.
type event struct {
	id, kind           string
	seq, change, event int64 // the position after it
	body               []byte
}

// payload is a delivery's body (design §3b): "seq" for a send, "change"
// for an edit or a deletion, "event" for a member or room event; data is
// the message as it is now, or the member or room as the event left it.
type payload struct {
	ID     string `json:"id"`
	Type   string `json:"type"`
	Room   string `json:"room"`
	Seq    int64  `json:"seq,omitempty"`
	Change int64  `json:"change,omitempty"`
	Event  int64  `json:"event,omitempty"`
	// Actor is who made a member or room event happen, when not the
	// member itself (a removal, a ban, a role, a room update).
	Actor string     `json:"actor,omitempty"`
	At    *time.Time `json:"at,omitempty"` // a member or room event's time
	Data  any        `json:"data"`
}

// memberData is a member as the REST API shows it (GET
// /api/rooms/{id}/members), without the presence, which is not stored.
type memberData struct {
	User     parley.User `json:"user"`
	Role     string      `json:"role"`
	JoinedAt time.Time   `json:"joined_at"`
	ReadSeq  int64       `json:"read_seq"`
}

// SendID and ChangeID are the ids of a room's events: the same event has
// the same id in every delivery, on every node, so the receiver
// deduplicates by it.
func SendID(roomID string, seq int64) string { return roomID + ".s" + strconv.FormatInt(seq, 10) }

// ChangeID is the id of the edit or deletion numbered change (see SendID).
func ChangeID(roomID string, change int64) string {
	return roomID + ".c" + strconv.FormatInt(change, 10)
}

// EventID is the id of the member or room event numbered n (see SendID).
func EventID(roomID string, n int64) string { return roomID + ".e" + strconv.FormatInt(n, 10) }

// merge orders a room's next member and room events (by number, after
// the position), sends (by seq, after it) and changes (by change number,
// after it) into one sequence, each stream in its own order.
//
// A member or room event goes exactly where it committed among the sends
// and changes: its row keeps the room's last seq and last change as its
// transaction left them (RoomEvent.Room), which the room's row lock hands
// out in commit order, so it goes after the sends and changes those
// numbers cover and before the rest, whatever the clocks of the nodes
// that wrote them say; a join comes before the new member's first
// message in the same commit. A change goes exactly where it committed
// among the sends too: its message's row keeps the room's last seq when
// it committed (Message.ChangeSeq), so it goes after that send and before
// the next. A change stored before the stores kept that place, or
// imported, goes by time (at its edit's or deletion's time, never before
// the send of its message, before a send on a tie).
//
// It stops where the next event cannot be decided from what was read: an
// event whose sends or changes before it are not read, a change whose
// message's send is past the sends read, or a stream whose full page was
// used up (what follows it may be earlier than the next of the others).
func merge(roomID string, p parley.HookPosition, evs []parley.RoomEvent, sends, changes []parley.Message, full [3]bool) ([]event, error) {
	// full: the page of events, sends, changes was full.
	var out []event
	seq, change, evn := p.Seq, p.Change, p.Event
	i, j, k := 0, 0, 0
	for i < len(sends) || j < len(changes) || k < len(evs) {
		if (full[0] && k == len(evs)) || (full[1] && i == len(sends)) || (full[2] && j == len(changes)) {
			break
		}
		// The next event's place: after the sends up to its last seq and
		// the changes up to its last change, before any later one.
		var next *parley.RoomEvent
		if k < len(evs) {
			next = &evs[k]
		}
		// Due once no send or change it covers is left in the pages, which
		// hold every one up to the cut unless full (the check above): a
		// seq the room never stored (a gap an import left) does not hold
		// it up.
		eventDue := next != nil && (i == len(sends) || sends[i].Seq > next.Room.LastSeq) &&
			(j == len(changes) || changes[j].Change > next.Room.LastChange)
		// The candidates, neither past the next event's place. The next
		// change goes first once the sends before its place are out (the
		// next send read is past it: every send up to the cut is read,
		// and a full page stopped above); one without a place, once its
		// message's send is out and by time.
		sendOK := i < len(sends) && (next == nil || sends[i].Seq <= next.Room.LastSeq)
		changeFirst := false
		if j < len(changes) && (next == nil || changes[j].Change <= next.Room.LastChange) {
			switch m := &changes[j]; {
			case m.ChangeSeq > 0:
				changeFirst = i == len(sends) || sends[i].Seq > m.ChangeSeq
			case m.Seq <= seq:
				changeFirst = !sendOK || !changedAt(m).After(sends[i].SentAt)
			}
		}
		var pl payload
		switch {
		case eventDue:
			e := next
			k++
			evn = e.N
			at := e.At
			pl = payload{ID: EventID(roomID, evn), Type: e.Kind, Room: roomID, Event: evn, Actor: e.ActorID, At: &at}
			if e.Member.UserID != "" {
				pl.Data = &memberData{User: parley.User{ID: e.Member.UserID, Name: e.Member.Name, Bot: parley.IsBotID(e.Member.UserID)},
					Role: e.Member.Role, JoinedAt: e.Member.JoinedAt, ReadSeq: e.Member.ReadSeq}
			} else {
				r := e.Room
				pl.Data = &r
			}
		case changeFirst:
			m := &changes[j]
			j++
			change = m.Change
			pl = payload{ID: ChangeID(roomID, change), Type: changeKind(m), Room: roomID, Change: change, Data: m}
		case sendOK:
			m := &sends[i]
			i++
			seq = m.Seq
			pl = payload{ID: SendID(roomID, seq), Type: parley.HookMessageSent, Room: roomID, Seq: seq, Data: m}
		default:
			// The next change's message is past the sends read, or the
			// next event waits for sends or changes not read: the rest
			// waits for the next round.
			return out, nil
		}
		body, err := json.Marshal(pl)
		if err != nil {
			return nil, err
		}
		out = append(out, event{id: pl.ID, kind: pl.Type, seq: seq, change: change, event: evn, body: body})
	}
	return out, nil
}

// changedAt is when a changed message's latest change happened.
func changedAt(m *parley.Message) time.Time {
	switch {
	case m.DeletedAt != nil:
		return *m.DeletedAt
	case m.EditedAt != nil:
		return *m.EditedAt
	}
	return m.SentAt
}

// changeKind names a change by what its message shows now, as a
// since-change replay does (roomevents.ReplayEvent): the store keeps the
// message's last change number, not what moved it, and a change read
// late is delivered once, at its last change. So: deleted for a
// tombstone, pin when its last change is its pin (Pinned.Change), edited
// for an edited message (a reaction on it too), else reaction when it
// carries reactions, thread when it carries a thread summary, and edited
// for the rest (a sender renamed by an account's deletion, an unpin: the
// store keeps no trace of a pin that is gone, so an unpin is delivered as
// what the message shows now, without pinned).
func changeKind(m *parley.Message) string {
	switch {
	case m.Deleted():
		return parley.HookMessageDeleted
	case m.Pinned != nil && m.Pinned.Change == m.Change:
		return parley.HookPin
	case m.EditedAt != nil:
	case len(m.Reactions) > 0:
		return parley.HookReaction
	case m.Thread != nil:
		return parley.HookThread
	}
	return parley.HookMessageEdited
}
