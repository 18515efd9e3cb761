package sqlite

import (
	"context"
	"fmt"

	"parley"
)

// Pins run on the writer like every other write: the message's pin
// columns change in the transaction that takes the room's next change
// number; the count of the room's pins (the bound) is read in it too, so
// two pins cannot both pass the bound.

// pinWrites are the writer's statements of pins.
type pinWrites struct {
	count, set *query
}

func (q *pinWrites) all() []*query {
	if q.count == nil {
		*q = pinWrites{
			count: &query{kind: "pin_count", text: `SELECT count(*) FROM messages WHERE room_id = ? AND pin_change > 0`},
			set: &query{kind: "set_pin", text: `UPDATE messages SET pinned_by = ?, pinned_at = ?, pin_change = ?, change = ?,
				change_seq = (SELECT last_seq FROM rooms WHERE rooms.id = messages.room_id)
				WHERE room_id = ? AND seq = ?`},
		}
	}
	return []*query{q.count, q.set}
}

// pinsQuery is the readers' statement of a room's pin list.
const pinsQuery = `SELECT ` + msgCols + ` FROM messages
	WHERE room_id = ? AND pin_change > 0 AND pin_change < ? ORDER BY pin_change DESC LIMIT ?`

// Pin implements parley.Store.
func (s *Store) Pin(ctx context.Context, p parley.PinMessage) (parley.Message, bool, error) {
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		q := &w.s.wq.changes.pins
		old, _, err := w.messageAt(p.RoomID, p.Seq)
		switch {
		case err != nil:
			return result{}, err
		case old.Deleted():
			return result{}, parley.PinDeleted(p.Add)
		case (old.Pinned != nil) == p.Add:
			return result{msg: old}, nil // nothing to do
		}
		if p.Add {
			var n int
			if err := w.row(q.count, p.RoomID).Scan(&n); err != nil {
				return result{}, fmt.Errorf("pin: %w", err)
			}
			if err := parley.CheckPins(n); err != nil {
				return result{}, err
			}
		}
		r, err := w.nextChange(p.RoomID)
		if err != nil {
			return result{}, fmt.Errorf("pin: %w", err)
		}
		m := old
		m.Change = r.LastChange
		action := parley.PinRemoved
		var by string
		var at any
		var pinChange int64
		if p.Add {
			action = parley.PinAdded
			now := w.now()
			m.Pinned = &parley.Pin{By: p.UserID, At: fromMicro(now), Change: m.Change}
			by, at, pinChange = p.UserID, now, m.Change
		} else {
			m.Pinned = nil
		}
		if _, err := w.exec(q.set, by, at, pinChange, m.Change, m.RoomID, m.Seq); err != nil {
			return result{}, fmt.Errorf("pin: %w", err)
		}
		w.emit(parley.Event{Kind: parley.EventPin, Room: r, UserID: p.UserID, Message: m, Reason: action})
		return result{msg: m, ok: true}, nil
	})
	return res.msg, res.ok, err
}

// Pins implements parley.Store.
func (s *Store) Pins(ctx context.Context, roomID string, before int64, limit int) ([]parley.Message, error) {
	limit = parley.ClampPageLimit(limit)
	if before <= 0 {
		before = 1<<63 - 1
	}
	q := s.rq.pins
	q.count()
	rows, err := q.stmt.QueryContext(ctx, roomID, before, limit)
	if err != nil {
		return nil, s.readErr("pins", err)
	}
	msgs, err := collectMessages(rows, limit, false)
	if err != nil {
		return nil, s.readErr("pins", err)
	}
	if len(msgs) == 0 {
		if err := s.roomExists(ctx, roomID); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}
