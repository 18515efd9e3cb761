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
	id, kind    string
	seq, change int64 // the position after it
	body        []byte
}

// payload is a delivery's body (design §3b): "seq" for a send, "change"
// for an edit or a deletion; data is the message as it is now.
type payload struct {
	ID     string          `json:"id"`
	Type   string          `json:"type"`
	Room   string          `json:"room"`
	Seq    int64           `json:"seq,omitempty"`
	Change int64           `json:"change,omitempty"`
	Data   *parley.Message `json:"data"`
}

// SendID and ChangeID are the ids of a room's events: the same event has
// the same id in every delivery, on every node, so the receiver
// deduplicates by it.
func SendID(roomID string, seq int64) string { return roomID + ".s" + strconv.FormatInt(seq, 10) }

// ChangeID is the id of the edit or deletion numbered change (see SendID).
func ChangeID(roomID string, change int64) string {
	return roomID + ".c" + strconv.FormatInt(change, 10)
}

// merge orders a room's next sends (by seq, after the position) and
// changes (by change number, after it) into one sequence: a change never
// before the send of its message, and otherwise the earlier of the two by
// time. It stops where the next event cannot be decided from what was
// read: a change whose message's send is past the sends read.
func merge(roomID string, p parley.HookPosition, sends, changes []parley.Message) ([]event, error) {
	var out []event
	seq, change := p.Seq, p.Change
	i, j := 0, 0
	for i < len(sends) || j < len(changes) {
		var m *parley.Message
		takeChange := false
		if j < len(changes) && changes[j].Seq <= seq {
			c := &changes[j]
			takeChange = i == len(sends) || !changedAt(c).After(sends[i].SentAt)
		}
		var pl payload
		if takeChange {
			m = &changes[j]
			j++
			change = m.Change
			pl = payload{ID: ChangeID(roomID, change), Type: parley.HookMessageEdited, Room: roomID, Change: change, Data: m}
			if m.Deleted() {
				pl.Type = parley.HookMessageDeleted
			}
		} else if i < len(sends) {
			m = &sends[i]
			i++
			seq = m.Seq
			pl = payload{ID: SendID(roomID, seq), Type: parley.HookMessageSent, Room: roomID, Seq: seq, Data: m}
		} else {
			break // the change's message is past the sends read
		}
		body, err := json.Marshal(pl)
		if err != nil {
			return nil, err
		}
		out = append(out, event{id: pl.ID, kind: pl.Type, seq: seq, change: change, body: body})
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
