package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"parley"
)

// Member and room events (webhooks.go at the root): every join, leave,
// removal, ban, role change, room creation and room update stores one
// row of room_events in the transaction of the change, numbered from the
// room's last_event counter, which the single writer moves. A membership
// change is rarer than a send: the two statements are not prepared.

// record emits e and stores it as the room's next member or room event;
// m is the member concerned (zero for a room event). Kinds that are not
// member or room events are only emitted.
func (w *wtx) record(e parley.Event, m parley.Member) error {
	w.emit(e)
	kind := parley.HookEventKind(&e)
	if kind == "" {
		return nil
	}
	var n int64
	if err := w.tx.QueryRow(`UPDATE rooms SET last_event = last_event + 1 WHERE id = ? RETURNING last_event`, e.Room.ID).Scan(&n); err != nil {
		return fmt.Errorf("room event: %w", err)
	}
	r := e.Room
	var joined any // NULL for a room event
	if !m.JoinedAt.IsZero() {
		joined = m.JoinedAt.UnixMicro()
	}
	_, err := w.tx.Exec(`INSERT INTO room_events (room_id, n, kind, user_id, actor_id, role, read_seq, joined_at,
			title, capacity, member_count, retention_seconds, last_seq, last_change, last_activity_at, at)
		VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		r.ID, n, kind, e.UserID, e.ActorID, m.Role, m.ReadSeq, joined,
		r.Title, r.Capacity, r.MemberCount, r.RetentionSeconds, r.LastSeq, r.LastChange, r.LastActivityAt.UnixMicro(), w.now())
	if err != nil {
		return fmt.Errorf("room event: %w", err)
	}
	return nil
}

// RoomEvents returns the room's member and room events numbered after
// after, by number, at most limit (parley.MaxPageLimit when <= 0), each
// member with its user's name now.
func (s *Store) RoomEvents(ctx context.Context, roomID string, after int64, limit int) ([]parley.RoomEvent, error) {
	if limit <= 0 || limit > parley.MaxPageLimit {
		limit = parley.MaxPageLimit
	}
	rows, err := s.rdb.QueryContext(ctx, `SELECT e.n, e.kind, e.user_id, coalesce(u.name, ''), e.actor_id, e.role, e.read_seq,
			e.joined_at, r.kind, e.title, e.capacity, e.member_count, e.retention_seconds, e.last_seq, e.last_change,
			e.last_activity_at, e.at
		FROM room_events e JOIN rooms r ON r.id = e.room_id LEFT JOIN users u ON u.id = e.user_id AND e.user_id <> ''
		WHERE e.room_id = ? AND e.n > ? ORDER BY e.n LIMIT ?`, roomID, after, limit)
	if err != nil {
		return nil, s.readErr("room_events", err)
	}
	defer rows.Close()
	var evs []parley.RoomEvent
	for rows.Next() {
		e := parley.RoomEvent{RoomID: roomID}
		var joined sql.NullInt64
		var activity, at int64
		r := &e.Room
		if err := rows.Scan(&e.N, &e.Kind, &e.Member.UserID, &e.Member.Name, &e.ActorID, &e.Member.Role, &e.Member.ReadSeq,
			&joined, &r.Kind, &r.Title, &r.Capacity, &r.MemberCount, &r.RetentionSeconds, &r.LastSeq, &r.LastChange,
			&activity, &at); err != nil {
			return nil, s.readErr("room_events", err)
		}
		r.ID = roomID
		r.LastActivityAt, e.At = fromMicro(activity), fromMicro(at)
		if e.Member.UserID != "" {
			e.Member.RoomID = roomID
			e.Member.JoinedAt = fromMicro(joined.Int64)
		}
		evs = append(evs, e)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("room_events", err)
	}
	return evs, nil
}

// ExpireRoomEvents implements parley.EventExpiry: it deletes up to limit
// events older at now than their room's retention (def for the rooms
// without their own; none when that is 0), through the writer.
func (s *Store) ExpireRoomEvents(ctx context.Context, now time.Time, def time.Duration, limit int) (int, error) {
	n := 0
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		res, err := w.tx.Exec(`DELETE FROM room_events WHERE (room_id, n) IN (
			SELECT e.room_id, e.n FROM room_events e JOIN rooms r ON r.id = e.room_id
			WHERE (r.retention_seconds > 0 OR ?2 > 0)
				AND e.at < ?1 - (CASE WHEN r.retention_seconds > 0 THEN r.retention_seconds ELSE ?2 END) * 1000000
			LIMIT ?3)`, now.UnixMicro(), int64(def/time.Second), limit)
		if err != nil {
			return result{}, fmt.Errorf("expire room events: %w", err)
		}
		k, err := res.RowsAffected()
		n = int(k)
		return result{}, err
	})
	return n, err
}
