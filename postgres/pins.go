package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// A pin is one statement under the room's lock, like a reaction: it reads
// the message and the room's number of pins, and only when there is
// something to do and the bound allows, takes the room's next change
// number and sets the message's pin columns (pinned_by, pinned_at,
// pin_change; cleared by an unpin). The lock makes the count exact: two
// pins of one room cannot both pass the bound.

// pinQuery: $1 room, $2 seq, $3 user, $4 add, $5 the room's bound, $6 now.
var pinQuery = `WITH old AS (SELECT ` + msgCols + ` FROM messages WHERE room_id = $1 AND seq = $2),
	cnt AS (SELECT count(*) AS n FROM messages WHERE room_id = $1 AND pin_change > 0),
	ok AS (SELECT 1 FROM old WHERE deleted_at IS NULL AND CASE WHEN $4::boolean
		THEN pin_change = 0 AND (SELECT n FROM cnt) < $5 ELSE pin_change > 0 END),
	r AS (UPDATE rooms SET last_change = last_change + 1 WHERE id = $1 AND EXISTS (SELECT 1 FROM ok)
		RETURNING ` + roomRet + `),
	m AS (UPDATE messages SET pinned_by = CASE WHEN $4::boolean THEN $3::text ELSE '' END,
			pinned_at = CASE WHEN $4::boolean THEN $6::timestamptz END,
			pin_change = CASE WHEN $4::boolean THEN r.last_change ELSE 0 END,
			change = r.last_change, change_seq = r.last_seq
		FROM r WHERE messages.room_id = $1 AND messages.seq = $2)
	SELECT ` + msgOut("old") + `, ` + roomOut("r") + `, (SELECT n FROM cnt)
	FROM (VALUES (1)) AS one LEFT JOIN old ON true LEFT JOIN r ON true`

// Pin implements parley.Store.
func (s *Store) Pin(ctx context.Context, p parley.PinMessage) (parley.Message, bool, error) {
	res, err := s.write(ctx, &pin{PinMessage: p})
	return res.msg, res.ok, err
}

type pin struct {
	parley.PinMessage
	at time.Time // the time queued: the pin's time
}

func (o *pin) lockRoom() string { return o.RoomID }
func (o *pin) shard() string    { return o.RoomID }
func (o *pin) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	o.at = now
	b.Queue(pinQuery, o.RoomID, o.Seq, o.UserID, o.Add, parley.MaxPinsPerRoom, now)
}

func (o *pin) decode(row pgx.Row) (result, []parley.Event, error) {
	var old parley.Message
	var r parley.Room
	var n int
	if err := row.Scan(append(append(messageDest(&old), roomDest(&r)...), &n)...); err != nil {
		return result{}, nil, err
	}
	fixMessage(&old)
	fixRoom(&r)
	switch {
	case old.ID == "":
		return result{}, nil, parley.Errorf(parley.CodeNotFound, "message not found")
	case old.Deleted():
		return result{}, nil, parley.PinDeleted(o.Add)
	case (old.Pinned != nil) == o.Add:
		return result{msg: old}, nil, nil // nothing to do
	case r.ID == "":
		if err := parley.CheckPins(n); err != nil {
			return result{}, nil, err
		}
		return result{}, nil, parley.Errorf(parley.CodeConflict, "the pin was refused: try again")
	}
	m := old
	m.Change = r.LastChange
	m.Pinned = nil
	action := parley.PinRemoved
	if o.Add {
		action = parley.PinAdded
		m.Pinned = &parley.Pin{By: o.UserID, At: o.at.UTC(), Change: m.Change}
	}
	return result{msg: m, ok: true}, []parley.Event{{Kind: parley.EventPin, Room: r, UserID: o.UserID,
		Message: m, Reason: action}}, nil
}

// Pins implements parley.Store.
func (s *Store) Pins(ctx context.Context, roomID string, before int64, limit int) ([]parley.Message, error) {
	limit = parley.ClampPageLimit(limit)
	if before <= 0 {
		before = 1<<63 - 1
	}
	rows, err := s.query(ctx, s.rq.pins, roomID, before, limit)
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

// newPinsQuery is the readers' statement of a room's pin list.
func newPinsQuery(m *metrics) *query {
	q := &query{kind: "pins", text: `SELECT ` + msgCols + ` FROM messages
		WHERE room_id = $1 AND pin_change > 0 AND pin_change < $2 ORDER BY pin_change DESC LIMIT $3`}
	bind(m, q)
	return q
}

func (o *pin) changesMessage() {}
