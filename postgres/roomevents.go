package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// Member and room events (webhooks.go at the root): each statement that
// joins, leaves, removes, bans, changes a role, creates or updates a room
// stores its room_events row in a data-modifying CTE branch of itself
// (queries.go, people.go), numbered by the room's last_event, which the
// statement's own UPDATE of the room's row moves under the batch's lock
// of that row: no statement and no round trip is added to the write.

// RoomEvents returns the room's member and room events numbered after
// after, by number, at most limit (parley.MaxPageLimit when <= 0), each
// member with its user's name now.
func (s *Store) RoomEvents(ctx context.Context, roomID string, after int64, limit int) ([]parley.RoomEvent, error) {
	if limit <= 0 || limit > parley.MaxPageLimit {
		limit = parley.MaxPageLimit
	}
	rows, err := s.pool.Query(ctx, `SELECT e.n, e.kind, e.user_id, coalesce(u.name, ''), e.actor_id, e.role, e.read_seq,
			e.joined_at, r.kind, e.title, e.capacity, e.member_count, e.retention_seconds, e.last_seq, e.last_change,
			e.last_activity_at, e.at
		FROM room_events e JOIN rooms r ON r.id = e.room_id LEFT JOIN users u ON u.id = e.user_id AND e.user_id <> ''
		WHERE e.room_id = $1 AND e.n > $2 ORDER BY e.n LIMIT $3`, roomID, after, limit)
	if err != nil {
		return nil, s.readErr("room events", err)
	}
	evs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (parley.RoomEvent, error) {
		e := parley.RoomEvent{RoomID: roomID}
		var joined *time.Time
		r := &e.Room
		if err := row.Scan(&e.N, &e.Kind, &e.Member.UserID, &e.Member.Name, &e.ActorID, &e.Member.Role, &e.Member.ReadSeq,
			&joined, &r.Kind, &r.Title, &r.Capacity, &r.MemberCount, &r.RetentionSeconds, &r.LastSeq, &r.LastChange,
			&r.LastActivityAt, &e.At); err != nil {
			return e, err
		}
		r.ID = roomID
		r.LastActivityAt, e.At = r.LastActivityAt.UTC(), e.At.UTC()
		if e.Member.UserID != "" {
			e.Member.RoomID = roomID
			if joined != nil {
				e.Member.JoinedAt = joined.UTC()
			}
		}
		return e, nil
	})
	if err != nil {
		return nil, s.readErr("room events", err)
	}
	return evs, nil
}

// ExpireRoomEvents implements parley.EventExpiry: it deletes up to limit
// events older at now than their room's retention (def for the rooms
// without their own; none when that is 0). It touches no counter, so it
// runs on the pool, beside the writers.
func (s *Store) ExpireRoomEvents(ctx context.Context, now time.Time, def time.Duration, limit int) (int, error) {
	tag, err := s.pool.Exec(ctx, `DELETE FROM room_events WHERE (room_id, n) IN (
		SELECT e.room_id, e.n FROM room_events e JOIN rooms r ON r.id = e.room_id
		WHERE (r.retention_seconds > 0 OR $2::bigint > 0)
			AND e.at < $1::timestamptz - make_interval(secs => CASE WHEN r.retention_seconds > 0 THEN r.retention_seconds ELSE $2::bigint END)
		LIMIT $3)`, now, int64(def/time.Second), limit)
	if err != nil {
		return 0, s.readErr("expire room events", err)
	}
	return int(tag.RowsAffected()), nil
}
