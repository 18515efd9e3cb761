package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// A reply is a write of its own (never in a run of grouped sends): one
// statement under the room's lock checks the message replied to and finds
// its thread's root, stores the message as a send does, marks it a reply
// of the root, and moves the root's thread summary, which takes the
// room's next change number (EventThread). The summary is counted from
// the stored replies and this one (the statement's parts do not see each
// other's changes), as the SQLite store counts it.

// newReplyQuery: $1 room, $2 sender, $3 sender name (” to look it up),
// $4 body, $5 client id, $6 message id, $7 now, $8 the seq replied to,
// $9 now as RFC 3339 text.
func newReplyQuery(m *metrics, tsv func(string) string) *query {
	q := &query{kind: "send_reply", text: `WITH old AS (SELECT ` + msgCols + ` FROM messages
			WHERE room_id = $1 AND sender_id = $2 AND client_id = $5 AND client_id <> '' AND $5 <> ''),
		who AS (SELECT CASE WHEN $3 = '' THEN name ELSE $3 END AS name FROM users WHERE id = $2),
		mem AS (SELECT 1 FROM members WHERE room_id = $1 AND user_id = $2),
		p AS (SELECT seq, reply_seq, deleted_at FROM messages WHERE room_id = $1 AND seq = $8),
		root AS (SELECT ` + msgCols + ` FROM messages
			WHERE room_id = $1 AND seq = (SELECT CASE WHEN reply_seq > 0 THEN reply_seq ELSE seq END FROM p)),
		r AS (UPDATE rooms SET last_seq = last_seq + 1, last_change = last_change + 1,
				last_activity_at = greatest(last_activity_at, $7)
			WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM old) AND EXISTS (SELECT 1 FROM who) AND EXISTS (SELECT 1 FROM mem)
				AND EXISTS (SELECT 1 FROM p WHERE deleted_at IS NULL) AND EXISTS (SELECT 1 FROM root)
			RETURNING ` + roomRet + `),
		th AS (SELECT json_build_object(
				'replies', (SELECT count(*) FROM messages WHERE room_id = $1 AND reply_seq = root.seq) + 1,
				'last_reply_at', $9::text,
				'participants', (SELECT coalesce(json_agg(x.s ORDER BY x.f), '[]'::json) FROM
					(SELECT a.s, min(a.q) AS f FROM (SELECT sender_id AS s, seq AS q FROM messages WHERE room_id = $1 AND reply_seq = root.seq
						UNION ALL SELECT $2, r.last_seq FROM r) AS a
					GROUP BY a.s ORDER BY f LIMIT ` + fmt.Sprint(parley.MaxParticipants) + `) AS x))::text AS t
			FROM root, r),
		m AS (INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, tsv,
				reply_seq, reply_sender, reply_excerpt)
			SELECT r.id, r.last_seq, $6, $2, who.name, $4, $5, $7, ` + tsv("$4") + `,
				root.seq, root.sender_name, left(root.body, ` + fmt.Sprint(parley.MaxExcerpt) + `) FROM r, who, root),
		rt AS (UPDATE messages SET thread = th.t, change = r.last_change, change_seq = r.last_seq FROM r, th, root
			WHERE messages.room_id = $1 AND messages.seq = root.seq),
		rd AS (UPDATE members SET read_seq = r.last_seq FROM r
			WHERE members.room_id = $1 AND members.user_id = $2 AND members.read_seq < r.last_seq)
		SELECT EXISTS (SELECT 1 FROM who), EXISTS (SELECT 1 FROM rooms WHERE id = $1), EXISTS (SELECT 1 FROM mem),
			coalesce((SELECT name FROM who), ''), EXISTS (SELECT 1 FROM p), coalesce((SELECT deleted_at IS NOT NULL FROM p), false),
			` + msgOut("old") + `, ` + msgOut("root") + `, ` + roomOut("r") + `, coalesce((SELECT t FROM th), '')
		FROM (VALUES (1)) AS one LEFT JOIN old ON true LEFT JOIN root ON true LEFT JOIN r ON true`}
	bind(m, q)
	return q
}

type reply struct{ send }

func (o *reply) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	o.setMessage(now)
	m := o.m
	q.reply.count()
	b.Queue(q.reply.text, m.RoomID, m.SenderID, m.SenderName, m.Body, m.ClientID, o.msg.ID, now, m.ReplyTo,
		now.UTC().Format(time.RFC3339Nano))
}

func (o *reply) decode(row pgx.Row) (result, []parley.Event, error) {
	var senderOK, roomOK, memberOK, parentOK, parentDeleted bool
	var name, thread string
	var old, root parley.Message
	var r parley.Room
	dest := append([]any{&senderOK, &roomOK, &memberOK, &name, &parentOK, &parentDeleted}, messageDest(&old)...)
	dest = append(append(append(dest, messageDest(&root)...), roomDest(&r)...), &thread)
	if err := row.Scan(dest...); err != nil {
		return result{}, nil, err
	}
	fixRoom(&r)
	fixMessage(&old)
	fixMessage(&root)
	switch {
	case old.ID != "": // a repeated client id
		return result{msg: old}, nil, nil
	case !senderOK:
		return result{}, nil, errUserNotFound(o.m.SenderID)
	case !roomOK:
		return result{}, nil, errRoomNotFound(o.m.RoomID)
	case !memberOK:
		return result{}, nil, errNotMember()
	case !parentOK:
		return result{}, nil, parley.Errorf(parley.CodeInvalid, "reply_to %d is no message of this room", o.m.ReplyTo)
	case parentDeleted:
		return result{}, nil, parley.Errorf(parley.CodeConflict, "the message replied to is deleted")
	case root.ID == "" || r.ID == "":
		return result{}, nil, errors.New("reply: the root or the room was not changed")
	}
	msg := o.msg
	msg.Seq, msg.SenderName = r.LastSeq, name
	msg.ReplyTo = &parley.ReplyRef{Seq: root.Seq, SenderName: root.SenderName, Excerpt: parley.Excerpt(root.Body)}
	root.Change = r.LastChange
	var err error
	if root.Thread, err = parley.DecodeThread(thread); err != nil {
		return result{}, nil, err
	}
	return result{msg: msg, ok: true}, []parley.Event{
		{Kind: parley.EventMessage, Room: r, UserID: msg.SenderID, Message: msg},
		{Kind: parley.EventThread, Room: r, UserID: msg.SenderID, Message: root},
	}, nil
}

// Replies implements parley.Store.
func (s *Store) Replies(ctx context.Context, roomID string, root, after int64, limit int) ([]parley.Message, error) {
	limit = parley.ClampPageLimit(limit)
	rows, err := s.query(ctx, s.rq.thread, roomID, root, after, limit)
	if err != nil {
		return nil, s.readErr("replies", err)
	}
	msgs, err := collectMessages(rows, limit, false)
	if err != nil {
		return nil, s.readErr("replies", err)
	}
	if len(msgs) == 0 {
		rows, err := s.query(ctx, s.rq.reactions.messageExists, roomID, root)
		if err != nil {
			return nil, s.readErr("replies", err)
		}
		n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
		if err != nil {
			return nil, s.readErr("replies", err)
		}
		if n == 0 {
			return nil, parley.Errorf(parley.CodeNotFound, "message not found")
		}
	}
	return msgs, nil
}

func (o *reply) changesMessage() {} // its root's thread summary
