package sqlite

import (
	"context"
	"fmt"
	"strings"

	"parley"
)

// Notification levels and mention counts (parley.MentionStore). They
// are read with plain statements: the room list's counts once per list,
// the levels only for a message that mentions someone.

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

// notifyStatesQuery counts, per room of the user, the unread messages
// whose mentions name the user or the room (through the partial index
// messages_mentions), at levels other than none.
const notifyStatesQuery = `SELECT m.room_id, m.notify,
		CASE WHEN m.notify = 'none' THEN 0 ELSE (SELECT count(*) FROM messages g
			WHERE g.room_id = m.room_id AND g.seq > m.read_seq AND g.mentions IS NOT NULL AND g.deleted_at IS NULL
				AND (instr(',' || g.mentions || ',', ',' || m.user_id || ',') > 0
					OR instr(',' || g.mentions || ',', ',@room,') > 0)) END
	FROM members m WHERE m.user_id = ?`

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
