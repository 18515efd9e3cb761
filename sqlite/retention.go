package sqlite

import (
	"context"
	"time"

	"parley"
)

var _ parley.Expiry = (*Store)(nil)

// The expired messages of the rooms from ?1 (after ?3 in room ?1), ?2
// now, ?4 the limit, ?5 the server's default retention in seconds. The
// rooms are the outer loop (CROSS JOIN keeps the order), each read in seq
// order along the primary key (a room's seqs are in send order), so the
// LIMIT stops the walk; a room with nothing expired is read to its end
// (there is no index by send time: it cost every send, 0008's comment).
// expiredOwn visits only the rooms with a retention of their own
// (rooms_retention), for a server that keeps forever.
const (
	expiredOwn = `SELECT m.room_id, m.seq FROM rooms r INDEXED BY rooms_retention CROSS JOIN messages m
	WHERE r.retention_seconds > 0 AND r.id >= ?1 AND m.room_id = r.id AND m.deleted_at IS NULL
		AND m.sent_at < ?2 - r.retention_seconds * 1000000 AND (m.room_id > ?1 OR m.seq > ?3)
	ORDER BY r.id, m.seq LIMIT ?4`
	expiredAll = `SELECT m.room_id, m.seq FROM rooms r CROSS JOIN messages m
	WHERE r.id >= ?1 AND m.room_id = r.id AND m.deleted_at IS NULL
		AND m.sent_at < ?2 - iif(r.retention_seconds > 0, r.retention_seconds, ?5) * 1000000
		AND (m.room_id > ?1 OR m.seq > ?3)
	ORDER BY r.id, m.seq LIMIT ?4`
)

// Expired implements parley.Expiry.
func (s *Store) Expired(ctx context.Context, now time.Time, def time.Duration, after parley.MessageRef, limit int) ([]parley.MessageRef, error) {
	q := expiredAll
	if def <= 0 {
		q = expiredOwn
	}
	rows, err := s.rdb.QueryContext(ctx, q, after.RoomID, now.UnixMicro(), after.Seq, limit, int64(def/time.Second))
	if err != nil {
		return nil, s.readErr("expired", err)
	}
	defer rows.Close()
	var refs []parley.MessageRef
	for rows.Next() {
		var r parley.MessageRef
		if err := rows.Scan(&r.RoomID, &r.Seq); err != nil {
			return nil, s.readErr("expired", err)
		}
		refs = append(refs, r)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("expired", err)
	}
	return refs, nil
}
