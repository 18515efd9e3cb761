package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// An edit or a deletion is one statement of its writer's batch, like every
// other write: the batch has locked the room's row first (lockRoom), so
// "UPDATE rooms SET last_change = last_change + 1 ... RETURNING" in the
// same statement that changes the message hands out the room's change
// numbers in order, with no holes, whichever node writes. The message's
// search vector (tsv) changes in the same statement, and so does a keyed
// change's idempotency key (change_keys): found, the statement applies
// nothing and reads the key's message as it is now; not found, it stores
// it. The room's lock makes a repeat on another node wait for this batch
// and then find the key.

// msgOut reads msgCols of a CTE alias back in the order messageDest
// expects, with a missing row as zero values and an empty id.
func msgOut(a string) string {
	return strings.NewReplacer("a.", a+".").Replace(`coalesce(a.id, ''), coalesce(a.room_id, ''), coalesce(a.seq, 0),
		coalesce(a.sender_id, ''), coalesce(a.sender_name, ''), coalesce(a.body, ''), coalesce(a.client_id, ''),
		coalesce(a.sent_at, 'epoch'), a.edited_at, a.deleted_at, coalesce(a.change, 0), coalesce(a.reactions, ''),
		coalesce(a.reply_seq, 0), coalesce(a.reply_sender, ''), coalesce(a.reply_excerpt, ''), coalesce(a.thread, ''), coalesce(a.files, ''),
		coalesce(a.pinned_by, ''), a.pinned_at, coalesce(a.pin_change, 0), coalesce(a.mentions, '')`)
}

// changeWrites are the writer's statements of edits and deletions.
type changeWrites struct {
	edit, remove *query
}

func newChangeWrites(m *metrics, tsv func(string) string) changeWrites {
	q := changeWrites{
		// $1 room, $2 seq, $3 editor, $4 body, $5 now, $6 client_id, $7
		// the mentions. The
		// stored key of the change (k), the message as it was (old; the
		// key's message when there is a key), and the room after the
		// change when there is no key, the editor is its sender and it is
		// not deleted.
		edit: &query{kind: "edit_message", text: changeKeyHead + `
			r AS (UPDATE rooms SET last_change = last_change + 1
				WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM k)
					AND EXISTS (SELECT 1 FROM old WHERE sender_id = $3 AND deleted_at IS NULL)
				RETURNING ` + roomRet + `),
			m AS (UPDATE messages SET body = $4, edited_at = $5, change = r.last_change, change_seq = r.last_seq, mentions = nullif($7::text, ''), tsv = ` + tsv("$4") + `
				FROM r WHERE messages.room_id = $1 AND messages.seq = $2),
			ex AS (UPDATE messages SET reply_excerpt = left($4, ` + fmt.Sprint(parley.MaxExcerpt) + `)
				FROM r WHERE messages.room_id = $1 AND messages.reply_seq = $2 AND messages.reply_seq > 0),
			nk AS (INSERT INTO change_keys (room_id, user_id, client_id, seq, deleted, change)
				SELECT $1, $3, $6, $2, false, r.last_change FROM r WHERE $6 <> '')
			` + changeKeyTail},
		// $1 room, $2 seq, $3 actor, $4 moderator, $5 now, $6 client_id.
		// As edit; the tombstone loses its text and its search vector.
		remove: &query{kind: "delete_message", text: changeKeyHead + `
			r AS (UPDATE rooms SET last_change = last_change + 1
				WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM k)
					AND EXISTS (SELECT 1 FROM old WHERE (sender_id = $3 OR $4::boolean) AND deleted_at IS NULL)
				RETURNING ` + roomRet + `),
			m AS (UPDATE messages SET body = '', files = NULL, mentions = NULL, deleted_at = $5, change = r.last_change, change_seq = r.last_seq, tsv = NULL, reactions = '',
					pinned_by = '', pinned_at = NULL, pin_change = 0
				FROM r WHERE messages.room_id = $1 AND messages.seq = $2),
			rx AS (DELETE FROM message_reactions USING r WHERE message_reactions.room_id = $1 AND message_reactions.seq = $2),
			ex AS (UPDATE messages SET reply_excerpt = ''
				FROM r WHERE messages.room_id = $1 AND messages.reply_seq = $2 AND messages.reply_seq > 0),
			nk AS (INSERT INTO change_keys (room_id, user_id, client_id, seq, deleted, change)
				SELECT $1, $3, $6, $2, true, r.last_change FROM r WHERE $6 <> '')
			` + changeKeyTail},
	}
	bind(m, q.edit, q.remove)
	return q
}

// changeKeyHead and changeKeyTail frame an edit's or a deletion's
// statement: the change's stored key k ($1 room, $3 user, $6 client_id;
// none for an empty client_id), the message old (the key's when found,
// $2's otherwise), and the result: old, the room r, k.
var (
	changeKeyHead = `WITH k AS (SELECT seq, deleted, change FROM change_keys
				WHERE room_id = $1 AND user_id = $3 AND client_id = $6 AND $6 <> ''),
			old AS (SELECT ` + msgCols + ` FROM messages
				WHERE room_id = $1 AND seq = coalesce((SELECT seq FROM k), $2)),`
	changeKeyTail = `SELECT ` + msgOut("old") + `, ` + roomOut("r") + `,
				coalesce(k.seq, 0), coalesce(k.deleted, false), coalesce(k.change, 0)
			FROM (VALUES (1)) AS one LEFT JOIN old ON true LEFT JOIN r ON true LEFT JOIN k ON true`
)

// changeReads are the readers' statements of changed_after.
type changeReads struct {
	changed *query
}

func newChangeReads(m *metrics) changeReads {
	q := changeReads{
		// "change > 0" lets the planner use the partial index
		// messages_change.
		changed: &query{kind: "changed", text: `SELECT ` + msgCols + `, change_seq FROM messages
			WHERE room_id = $1 AND change > 0 AND change > $2 ORDER BY change LIMIT $3`},
	}
	bind(m, q.changed)
	return q
}

func msgColsOf(a string) string {
	return strings.NewReplacer("a.", a+".").Replace(`a.id, a.room_id, a.seq, a.sender_id, a.sender_name, a.body,
		a.client_id, a.sent_at, a.edited_at, a.deleted_at, a.change, a.reactions,
		a.reply_seq, a.reply_sender, a.reply_excerpt, a.thread, coalesce(a.files, ''),
		a.pinned_by, a.pinned_at, a.pin_change, coalesce(a.mentions, '')`)
}

// EditMessage implements parley.Store.
func (s *Store) EditMessage(ctx context.Context, e parley.Edit) (parley.Message, error) {
	res, err := s.write(ctx, &change{roomID: e.RoomID, seq: e.Seq, actor: e.EditorID, body: e.Body, edit: true, clientID: e.ClientID, mentions: e.Mentions})
	return res.msg, err
}

// DeleteMessage implements parley.Store. The tombstone keeps its client_id,
// so that a resend of it returns the tombstone rather than storing the
// text again.
func (s *Store) DeleteMessage(ctx context.Context, d parley.Deletion) (parley.Message, bool, error) {
	res, err := s.write(ctx, &change{roomID: d.RoomID, seq: d.Seq, actor: d.ActorID, moderator: d.Moderator, clientID: d.ClientID})
	return res.msg, res.ok, err
}

// change is an edit (edit set) or a deletion.
type change struct {
	roomID    string
	seq       int64
	actor     string
	body      string             // the new body of an edit
	mentions  parley.MentionList // the new mentions of an edit
	moderator bool               // a deletion by the room's owner or an admin
	edit      bool
	clientID  string // the change's idempotency key, "" for none
	at        time.Time
}

func (o *change) lockRoom() string { return o.roomID }
func (o *change) shard() string    { return o.roomID }

func (o *change) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	o.at = now
	if o.edit {
		q.changes.edit.count()
		b.Queue(q.changes.edit.text, o.roomID, o.seq, o.actor, o.body, now, o.clientID, string(o.mentions))
		return
	}
	q.changes.remove.count()
	b.Queue(q.changes.remove.text, o.roomID, o.seq, o.actor, o.moderator, now, o.clientID)
}

func (o *change) decode(row pgx.Row) (result, []parley.Event, error) {
	var old parley.Message
	var r parley.Room
	var k parley.ChangeKey
	if err := row.Scan(append(append(messageDest(&old), roomDest(&r)...), &k.Seq, &k.Deleted, &k.Change)...); err != nil {
		return result{}, nil, err
	}
	fixMessage(&old)
	fixRoom(&r)
	switch {
	case k.Change > 0 && old.ID == "":
		return result{}, nil, errors.New("change: the message of a stored key is missing")
	case k.Change > 0:
		// A repeat: applied nothing; old is the key's message as it is now.
		if err := k.Repeat(o.clientID, o.seq, !o.edit, o.body, &old); err != nil {
			return result{}, nil, err
		}
		return result{msg: old}, nil, nil
	case old.ID == "":
		return result{}, nil, parley.Errorf(parley.CodeNotFound, "message not found")
	case o.edit && old.SenderID != o.actor:
		return result{}, nil, parley.Errorf(parley.CodeForbidden, "only its sender may edit a message")
	case o.edit && old.Deleted():
		return result{}, nil, parley.Errorf(parley.CodeConflict, "the message is deleted")
	case !o.edit && old.SenderID != o.actor && !o.moderator:
		return result{}, nil, parley.Errorf(parley.CodeForbidden, "only its sender or the room's owner or an admin may delete a message")
	case !o.edit && old.Deleted():
		return result{msg: old}, nil, nil
	case r.ID == "":
		return result{}, nil, errors.New("change: the room was not changed")
	}
	m := old
	at := o.at.UTC()
	m.Change = r.LastChange
	kind := parley.EventEdited
	if o.edit {
		m.Body, m.EditedAt, m.Mentions = o.body, &at, o.mentions
	} else {
		m.Body, m.DeletedAt, m.Reactions, m.Files, m.Pinned, m.Mentions, kind = "", &at, nil, "", nil, "", parley.EventDeleted
	}
	return result{msg: m, ok: true}, []parley.Event{{Kind: kind, Room: r, UserID: o.actor, Message: m}}, nil
}

// Changed implements parley.Store.
func (s *Store) Changed(ctx context.Context, roomID string, after int64, limit int) ([]parley.Message, error) {
	limit = parley.ClampPageLimit(limit)
	rows, err := s.query(ctx, s.rq.changes.changed, roomID, after, limit)
	if err != nil {
		return nil, s.readErr("changed", err)
	}
	msgs, err := collectMessages(rows, limit, true)
	if err != nil {
		return nil, s.readErr("changed", err)
	}
	if len(msgs) == 0 {
		if err := s.roomExists(ctx, roomID); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// collectMessages reads and closes rows of msgCols, followed by the
// message's change_seq (Message.ChangeSeq) when changeSeq.
func collectMessages(rows pgx.Rows, capacity int, changeSeq bool) ([]parley.Message, error) {
	defer rows.Close()
	msgs := make([]parley.Message, 0, capacity)
	for rows.Next() {
		var m parley.Message
		dest := messageDest(&m)
		if changeSeq {
			dest = append(dest, &m.ChangeSeq)
		}
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		fixMessage(&m)
		msgs = append(msgs, m)
	}
	return msgs, rows.Err()
}

func (o *change) changesMessage() {}
