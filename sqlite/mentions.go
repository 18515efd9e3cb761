package sqlite

import (
	"context"
	"fmt"
	"strings"

	"parley"
)

// Notification levels and mention counts (parley.MentionStore). They
// are read with plain statements: the room list's counts with the list
// (Rooms, roomListQuery), the levels only for a message that mentions
// someone.

// SetNotifyLevel implements parley.Store.
func (s *Store) SetNotifyLevel(ctx context.Context, roomID, userID, level string) error {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		res, err := w.tx.Exec(`UPDATE members SET notify = ? WHERE room_id = ? AND user_id = ?`, level, roomID, userID)
		if err != nil {
			return result{}, fmt.Errorf("set notify level: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 0 {
			return result{}, parley.Errorf(parley.CodeNotFound, "not a member of this room")
		}
		return result{}, nil
	})
	return err
}

// unreadMentions counts, for the membership p (room_id as p.id,
// user_id, read_seq, notify), the unread messages whose mentions name the
// user or the room (through the partial index messages_mentions), at
// levels other than none. The room list (roomListQuery) and
// notifyStatesQuery share it.
const unreadMentions = `CASE WHEN p.notify = 'none' THEN 0 ELSE (SELECT count(*) FROM messages x
			WHERE x.room_id = p.id AND x.seq > p.read_seq AND x.mentions IS NOT NULL AND x.deleted_at IS NULL
				AND (instr(',' || x.mentions || ',', ',' || p.user_id || ',') > 0
					OR instr(',' || x.mentions || ',', ',@room,') > 0)) END`

// notifyStatesQuery is each room's level and unreadMentions.
const notifyStatesQuery = `SELECT p.id, p.notify, ` + unreadMentions + `
	FROM (SELECT room_id AS id, user_id, read_seq, notify FROM members WHERE user_id = ?) AS p`

// NotifyStates implements parley.Store.
func (s *Store) NotifyStates(ctx context.Context, userID string) (map[string]parley.RoomNotify, error) {
	rows, err := s.rdb.QueryContext(ctx, notifyStatesQuery, userID)
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
	out := map[string]string{}
	for len(userIDs) > 0 {
		n := min(len(userIDs), 500)
		args := []any{roomID}
		for _, id := range userIDs[:n] {
			args = append(args, id)
		}
		userIDs = userIDs[n:]
		rows, err := s.rdb.QueryContext(ctx, `SELECT user_id, notify FROM members
			WHERE room_id = ? AND notify <> 'all' AND user_id IN (?`+strings.Repeat(", ?", n-1)+`)`, args...)
		if err != nil {
			return nil, s.readErr("notify levels", err)
		}
		for rows.Next() {
			var id, level string
			if err := rows.Scan(&id, &level); err != nil {
				rows.Close()
				return nil, s.readErr("notify levels", err)
			}
			out[id] = level
		}
		err = rows.Err()
		rows.Close()
		if err != nil {
			return nil, s.readErr("notify levels", err)
		}
	}
	return out, nil
}
