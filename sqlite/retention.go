package sqlite

import (
	"context"
	"time"

	"parley"
)

var _ parley.Expiry = (*Store)(nil)

// expired walks the messages table in its key order from after; the
// filter reads no index beyond the key, so a sweep's pass reads the table
// once, on the reader pool, beside the writer.
const expired = `SELECT room_id, seq FROM messages
	WHERE (room_id, seq) > (?, ?) AND deleted_at IS NULL AND sent_at < ?
	ORDER BY room_id, seq LIMIT ?`

// Expired implements parley.Expiry.
func (s *Store) Expired(ctx context.Context, cutoff time.Time, after parley.MessageRef, limit int) ([]parley.MessageRef, error) {
	rows, err := s.rdb.QueryContext(ctx, expired, after.RoomID, after.Seq, cutoff.UnixMicro(), limit)
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
