package postgres

import (
	"context"
	"time"

	"parley"
)

var _ parley.Expiry = (*Store)(nil)

// expired walks the messages in their primary key's order from after; a
// sweep's pass reads the table once.
const expired = `SELECT room_id, seq FROM messages
	WHERE (room_id, seq) > ($1, $2) AND deleted_at IS NULL AND sent_at < $3
	ORDER BY room_id, seq LIMIT $4`

// Expired implements parley.Expiry.
func (s *Store) Expired(ctx context.Context, cutoff time.Time, after parley.MessageRef, limit int) ([]parley.MessageRef, error) {
	if s.live.isDown() {
		return nil, errNoAnswer
	}
	rows, err := s.pool.Query(ctx, expired, after.RoomID, after.Seq, cutoff, limit)
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
