package postgres

import (
	"context"
	"time"

	"parley"
)

var _ parley.Expiry = (*Store)(nil)

// The expired messages of the rooms from $1 (after $3 in room $1), $2
// now, $4 the limit, $5 the server's default retention in seconds: the
// rooms in id order, each read in seq order along the primary key (a
// room's seqs are in send order), so the LIMIT stops the walk; a room with
// nothing expired is read to its end (there is no index by send time: it
// cost every send, 0006's comment). expiredOwn visits only the rooms with
// a retention of their own (rooms_retention), for a server that keeps
// forever.
const (
	expiredOwn = `SELECT m.room_id, m.seq FROM rooms r CROSS JOIN LATERAL (
		SELECT room_id, seq, sent_at FROM messages
		WHERE room_id = r.id AND deleted_at IS NULL AND sent_at < $2::timestamptz - r.retention_seconds * interval '1 second'
			AND (room_id > $1 OR seq > $3)
		ORDER BY seq LIMIT $4) m
	WHERE r.retention_seconds > 0 AND r.id >= $1 AND $5::bigint >= 0
	ORDER BY r.id, m.seq LIMIT $4`
	expiredAll = `SELECT m.room_id, m.seq FROM rooms r CROSS JOIN LATERAL (
		SELECT room_id, seq, sent_at FROM messages
		WHERE room_id = r.id AND deleted_at IS NULL
			AND sent_at < $2::timestamptz - (CASE WHEN r.retention_seconds > 0 THEN r.retention_seconds ELSE $5::bigint END) * interval '1 second'
			AND (room_id > $1 OR seq > $3)
		ORDER BY seq LIMIT $4) m
	WHERE r.id >= $1
	ORDER BY r.id, m.seq LIMIT $4`
)

// Expired implements parley.Expiry.
func (s *Store) Expired(ctx context.Context, now time.Time, def time.Duration, after parley.MessageRef, limit int) ([]parley.MessageRef, error) {
	if s.live.isDown() {
		return nil, errNoAnswer
	}
	q := expiredAll
	if def <= 0 {
		q = expiredOwn
	}
	rows, err := s.pool.Query(ctx, q, after.RoomID, now, after.Seq, limit, int64(def/time.Second))
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
