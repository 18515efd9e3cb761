package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// deleteUserQuery deletes account $1 (its current name held back until
// $2) in one statement: its tokens go, its row stays (messages and bans
// point at it) under the name 'deleted-user:' || id with an empty password
// hash. It returns the number of accounts found, 0 or 1.
const deleteUserQuery = `WITH u AS (SELECT id, name FROM users WHERE id = $1),
	t AS (DELETE FROM tokens WHERE user_id IN (SELECT id FROM u)),
	h AS (INSERT INTO name_holds (name, until) SELECT name, $2 FROM u
		ON CONFLICT (name) DO UPDATE SET until = excluded.until),
	e AS (UPDATE users SET name = 'deleted-user:' || users.id, password_hash = '\x' FROM u WHERE users.id = u.id)
	SELECT count(*) FROM u`

// DeleteUser deletes account u (DELETE /api/me) in one transaction: its
// tokens go, its row stays (messages and bans point at it) under the
// name "deleted-user:" + id with an empty password hash, so that no login
// finds it, and its name is held back from CreateUser until holdUntil.
// Memberships and messages are the caller's (package chat leaves the rooms
// and deletes the messages through the store's own operations, whose
// events tell caches and members). Fails with CodeNotFound for an unknown
// user.
func (s *Store) DeleteUser(ctx context.Context, u parley.User, holdUntil time.Time) error {
	_, err := s.write(ctx, &deleteUser{u: u, until: holdUntil})
	return err
}

// deleteUser runs through the writer of u's name, as the CreateUser of
// that name does, so that the two never race.
type deleteUser struct {
	u     parley.User
	until time.Time
}

func (o *deleteUser) lockRoom() string { return "" }
func (o *deleteUser) shard() string    { return o.u.Name }
func (o *deleteUser) crossShard() bool { return true } // the tokens' rows
func (o *deleteUser) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	b.Queue(deleteUserQuery, o.u.ID, o.until)
}

func (o *deleteUser) decode(row pgx.Row) (result, []parley.Event, error) {
	var n int64
	if err := row.Scan(&n); err != nil {
		return result{}, nil, err
	}
	if n == 0 {
		return result{}, nil, parley.Errorf(parley.CodeNotFound, "user %s not found", o.u.ID)
	}
	return result{}, nil, nil
}

// renameSenderQuery shows message $2 of room $1, sent by $3, under the
// name $4: the room's last_change moves by one in the same statement
// (the batch has locked the room first), unless the message is another's
// or already under that name. It returns the message as it was and the
// room after the change (an empty id when nothing changed).
var renameSenderQuery = `WITH old AS (SELECT ` + msgCols + ` FROM messages WHERE room_id = $1 AND seq = $2),
	r AS (UPDATE rooms SET last_change = last_change + 1
		WHERE id = $1 AND EXISTS (SELECT 1 FROM old WHERE sender_id = $3 AND sender_name <> $4)
		RETURNING ` + roomRet + `),
	m AS (UPDATE messages SET sender_name = $4, change = r.last_change, change_seq = r.last_seq
		FROM r WHERE messages.room_id = $1 AND messages.seq = $2)
	SELECT ` + msgOut("old") + `, ` + roomOut("r") + `
	FROM (VALUES (1)) AS one LEFT JOIN old ON true LEFT JOIN r ON true`

// RenameSender shows message seq of the room under name instead of its
// sender's name (a deleted account's messages that the operator keeps):
// the message, or its tombstone, takes a new change of the room, and its
// event (EventEdited, or EventDeleted for a tombstone) tells caches and
// members. Its text and edit time stay. A message of another sender, or
// one already under name, is returned as it is, with no change. Fails
// with CodeNotFound for an unknown message.
func (s *Store) RenameSender(ctx context.Context, roomID string, seq int64, senderID, name string) (parley.Message, error) {
	res, err := s.write(ctx, &renameSender{roomID: roomID, seq: seq, senderID: senderID, name: name})
	return res.msg, err
}

type renameSender struct {
	roomID         string
	seq            int64
	senderID, name string
}

func (o *renameSender) lockRoom() string { return o.roomID }
func (o *renameSender) shard() string    { return o.roomID }
func (o *renameSender) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	b.Queue(renameSenderQuery, o.roomID, o.seq, o.senderID, o.name)
}

func (o *renameSender) decode(row pgx.Row) (result, []parley.Event, error) {
	var old parley.Message
	var r parley.Room
	if err := row.Scan(append(messageDest(&old), roomDest(&r)...)...); err != nil {
		return result{}, nil, err
	}
	fixMessage(&old)
	fixRoom(&r)
	switch {
	case old.ID == "":
		return result{}, nil, parley.Errorf(parley.CodeNotFound, "message not found")
	case r.ID == "":
		return result{msg: old}, nil, nil
	}
	m := old
	m.SenderName, m.Change = o.name, r.LastChange
	kind := parley.EventEdited
	if m.Deleted() {
		kind = parley.EventDeleted
	}
	return result{msg: m}, []parley.Event{{Kind: kind, Room: r, UserID: o.senderID, Message: m}}, nil
}

// SenderRooms returns the rooms holding messages of userID, tombstones
// included, whether or not the user is still a member: account deletion
// reaches the rooms left before. It reads the whole messages table (no
// index by sender: it would cost every send for a rare call).
func (s *Store) SenderRooms(ctx context.Context, userID string) ([]string, error) {
	rows, err := s.query(ctx, s.rq.senderRooms, userID)
	if err != nil {
		return nil, s.readErr("sender rooms", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.readErr("sender rooms", err)
	}
	return ids, nil
}

func (o *renameSender) changesMessage() {}
