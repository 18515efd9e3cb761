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

// sweepLockKey is the advisory lock of the retention sweep: one node of a
// cluster sweeps at a time ("parley retention" in ASCII, folded).
const sweepLockKey int64 = 0x7061726c72657400

// SweepLock takes the cluster's retention lock (a session advisory lock on
// a connection of its own) without waiting: ok is false when another node
// holds it. release unlocks and returns the connection.
func (s *Store) SweepLock(ctx context.Context) (release func(), ok bool, err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return nil, false, s.readErr("sweep lock", err)
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock($1)`, sweepLockKey).Scan(&ok); err != nil || !ok {
		conn.Release()
		if err != nil {
			return nil, false, s.readErr("sweep lock", err)
		}
		return nil, false, nil
	}
	return func() {
		// A failed unlock ends the session, and with it the lock.
		if _, err := conn.Exec(context.Background(), `SELECT pg_advisory_unlock($1)`, sweepLockKey); err != nil {
			conn.Conn().Close(context.Background())
		}
		conn.Release()
	}, true, nil
}
