package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"parley"
)

// accountWriteQueries are the writer's statements of account deletion.
type accountWriteQueries struct {
	nameHeld, holdName, eraseUser, renameSender *query
}

func (q *accountWriteQueries) all() []*query {
	if q.nameHeld == nil {
		*q = accountWriteQueries{
			// ?1 name, ?2 now.
			nameHeld: &query{kind: "name_held", text: `SELECT 1 FROM name_holds WHERE name = ?1 AND until > ?2`},
			// ?1 user, ?2 until: the user's current name.
			holdName: &query{kind: "hold_name", text: `INSERT INTO name_holds (name, until)
				SELECT name, ?2 FROM users WHERE id = ?1
				ON CONFLICT (name) DO UPDATE SET until = excluded.until`},
			eraseUser: &query{kind: "erase_user", text: `UPDATE users SET name = 'deleted-user:' || id, password_hash = x''
				WHERE id = ?`},
			// ?1 name, ?2 change, ?3 room, ?4 seq.
			renameSender: &query{kind: "rename_sender", text: `UPDATE messages SET sender_name = ?1, change = ?2, change_seq = (SELECT last_seq FROM rooms WHERE rooms.id = messages.room_id)
				WHERE room_id = ?3 AND seq = ?4`},
		}
	}
	return []*query{q.nameHeld, q.holdName, q.eraseUser, q.renameSender}
}

// DeleteUser deletes account u (DELETE /api/me) in one transaction: its
// tokens go, its row stays (messages and bans point at it) under the
// name "deleted-user:" + id with an empty password hash, so that no
// login finds it, and its name is held back from CreateUser until
// holdUntil. Memberships and messages are the caller's (package chat
// leaves the rooms and deletes the messages through the store's own
// operations, whose events tell caches and members). Fails with
// CodeNotFound for an unknown user.
func (s *Store) DeleteUser(ctx context.Context, u parley.User, holdUntil time.Time) error {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		if _, err := w.userName(u.ID); err != nil {
			return result{}, err
		}
		q := &w.s.wq.accounts
		if _, err := w.exec(w.s.wq.deleteTokens, u.ID); err != nil {
			return result{}, fmt.Errorf("delete user tokens: %w", err)
		}
		if _, err := w.exec(q.holdName, u.ID, holdUntil.UnixMicro()); err != nil {
			return result{}, fmt.Errorf("hold name: %w", err)
		}
		if _, err := w.exec(q.eraseUser, u.ID); err != nil {
			return result{}, fmt.Errorf("erase user: %w", err)
		}
		return result{}, nil
	})
	return err
}

// nameHeld reports whether a deleted account's hold keeps name from a new
// account at time now (unix microseconds).
func (w *wtx) nameHeld(name string, now int64) (bool, error) {
	var one int
	err := w.row(w.s.wq.accounts.nameHeld, name, now).Scan(&one)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return false, fmt.Errorf("name held: %w", err)
}

// RenameSender shows message seq of the room under name instead of its
// sender's name (a deleted account's messages that the operator keeps):
// the message, or its tombstone, takes a new change of the room, and its
// event (EventEdited, or EventDeleted for a tombstone) tells caches and
// members. Its text and edit time stay. A message of another sender, or
// one already under name, is returned as it is, with no change. Fails
// with CodeNotFound for an unknown message.
func (s *Store) RenameSender(ctx context.Context, roomID string, seq int64, senderID, name string) (parley.Message, error) {
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		old, _, err := w.messageAt(roomID, seq)
		if err != nil || old.SenderID != senderID || old.SenderName == name {
			return result{msg: old}, err
		}
		r, err := w.nextChange(roomID)
		if err != nil {
			return result{}, fmt.Errorf("rename sender: %w", err)
		}
		m := old
		m.SenderName, m.Change = name, r.LastChange
		if _, err := w.exec(w.s.wq.accounts.renameSender, name, m.Change, roomID, seq); err != nil {
			return result{}, fmt.Errorf("rename sender: %w", err)
		}
		kind := parley.EventEdited
		if m.Deleted() {
			kind = parley.EventDeleted
		}
		w.emit(parley.Event{Kind: kind, Room: r, UserID: senderID, Message: m})
		return result{msg: m}, nil
	})
	return res.msg, err
}

// SenderRooms returns the rooms holding messages of userID, tombstones
// included, whether or not the user is still a member: account deletion
// reaches the rooms left before. It reads the whole messages table (no
// index by sender: it would cost every send for a rare call).
func (s *Store) SenderRooms(ctx context.Context, userID string) ([]string, error) {
	q := s.rq.senderRooms
	q.count()
	rows, err := q.stmt.QueryContext(ctx, userID)
	if err != nil {
		return nil, s.readErr("sender rooms", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.readErr("sender rooms", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("sender rooms", err)
	}
	return ids, nil
}
