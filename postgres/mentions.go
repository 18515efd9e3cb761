package postgres

import (
	"context"

	"parley"
)

// Notification levels and mention counts (parley.MentionStore), as in
// package sqlite: plain statements on the pool, the room list's counts
// with the list (Rooms, roomListQuery), the levels only for a message
// that mentions someone.

// SetNotifyLevel implements parley.Store.
func (s *Store) SetNotifyLevel(ctx context.Context, roomID, userID, level string) error {
	tag, err := s.pool.Exec(ctx, `UPDATE members SET notify = $3 WHERE room_id = $1 AND user_id = $2`, roomID, userID, level)
	if err != nil {
		return s.readErr("set notify level", err)
	}
	if tag.RowsAffected() == 0 {
		return parley.Errorf(parley.CodeNotFound, "not a member of this room")
	}
	return nil
}

// unreadMentions is sqlite's, for the membership m: the unread messages
// whose mentions name the user or the room, through the partial index
// messages_mentions, none at level none. The room list (roomListQuery)
// and notifyStatesQuery share it.
const unreadMentions = `CASE WHEN m.notify = 'none' THEN 0 ELSE (SELECT count(*) FROM messages x
			WHERE x.room_id = m.room_id AND x.seq > m.read_seq AND x.mentions IS NOT NULL AND x.deleted_at IS NULL
				AND (position(',' || m.user_id || ',' IN ',' || x.mentions || ',') > 0
					OR position(',@room,' IN ',' || x.mentions || ',') > 0)) END`

// notifyStatesQuery is each room's level and unreadMentions.
const notifyStatesQuery = `SELECT m.room_id, m.notify, ` + unreadMentions + `
	FROM members m WHERE m.user_id = $1`

// NotifyStates implements parley.Store.
func (s *Store) NotifyStates(ctx context.Context, userID string) (map[string]parley.RoomNotify, error) {
	rows, err := s.pool.Query(ctx, notifyStatesQuery, userID)
	if err != nil {
		return nil, s.readErr("notify states", err)
	}
	defer rows.Close()
	out := map[string]parley.RoomNotify{}
	for rows.Next() {
		var room string
		var st parley.RoomNotify
		if err := rows.Scan(&room, &st.Level, &st.Mentions); err != nil {
			return nil, s.readErr("notify states", err)
		}
		if st.Level != parley.NotifyAll || st.Mentions > 0 {
			out[room] = st
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("notify states", err)
	}
	return out, nil
}

// NotifyLevels implements parley.Store.
func (s *Store) NotifyLevels(ctx context.Context, roomID string, userIDs []string) (map[string]string, error) {
	rows, err := s.pool.Query(ctx, `SELECT user_id, notify FROM members
		WHERE room_id = $1 AND notify <> 'all' AND user_id = ANY($2::text[])`, roomID, userIDs)
	if err != nil {
		return nil, s.readErr("notify levels", err)
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var id, level string
		if err := rows.Scan(&id, &level); err != nil {
			return nil, s.readErr("notify levels", err)
		}
		out[id] = level
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("notify levels", err)
	}
	return out, nil
}
