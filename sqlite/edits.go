package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"parley"
)

// Edits and deletions run on the writer like every other write, in the
// batch's transaction: the room's last_change moves by one (UPDATE ...
// RETURNING) in the same transaction that changes the message and, once
// the search indexer has indexed it (indexer.go), its entry in the
// full-text index, so change numbers have no holes and a committed edit
// of an indexed message is searchable at once. The old text leaves the files
// within EraseBound (checkpoint.go). A keyed change reads its key
// (change_keys) first and stores it in the same transaction: the writer is
// the only one, so a repeat in the same batch or a later one finds it.

// changeWrites are the writer's statements of edits, deletions and the
// full-text index (search.go).
type changeWrites struct {
	messageAt, bumpChange, edit, tombstone, ftsDelete, ftsPut *query
	// keyAt and keyPut read and store a change's idempotency key.
	keyAt, keyPut *query
	// reactions are the writes of reactions.go, replies of replies.go.
	reactions reactionWrites
	replies   replyWrites
	pins      pinWrites // pins.go
	// search are the indexer's (indexer.go).
	search searchWrites
	// ftsInsert indexes a chunk of new messages, one per chunk size.
	ftsInsert [len(chunkSizes)]*query
}

func (q *changeWrites) all() []*query {
	if q.messageAt == nil {
		*q = changeWrites{
			messageAt: &query{kind: "message_at", text: `SELECT ` + msgCols + `,
				(SELECT num FROM rooms WHERE rooms.id = messages.room_id) FROM messages WHERE room_id = ? AND seq = ?`},
			bumpChange: &query{kind: "next_change", text: `UPDATE rooms SET last_change = last_change + 1
				WHERE id = ? RETURNING ` + roomCols},
			edit: &query{kind: "edit_message", text: `UPDATE messages SET body = ?, edited_at = ?, change = ?, mentions = ?,
				change_seq = (SELECT last_seq FROM rooms WHERE rooms.id = messages.room_id)
				WHERE room_id = ? AND seq = ?`},
			tombstone: &query{kind: "delete_message", text: `UPDATE messages SET body = '', files = NULL, mentions = NULL, deleted_at = ?, change = ?, reactions = '',
				change_seq = (SELECT last_seq FROM rooms WHERE rooms.id = messages.room_id),
				pinned_by = '', pinned_at = NULL, pin_change = 0
				WHERE room_id = ? AND seq = ?`},
			// An external-content table forgets a row when told its old
			// text: exactly what was indexed.
			ftsDelete: &query{kind: "fts_delete", text: `INSERT INTO messages_fts (messages_fts, rowid, body)
				VALUES ('delete', ?, ?)`},
			ftsPut: &query{kind: "fts_insert", text: `INSERT INTO messages_fts (rowid, body) VALUES (?, ?)`},
			keyAt: &query{kind: "change_key", text: `SELECT seq, deleted, change FROM change_keys
				WHERE room_id = ? AND user_id = ? AND client_id = ?`},
			keyPut: &query{kind: "put_change_key", text: `INSERT INTO change_keys (room_id, user_id, client_id, seq, deleted, change)
				VALUES (?, ?, ?, ?, ?, ?)`},
		}
		for i, n := range chunkSizes {
			q.ftsInsert[i] = &query{kind: "fts_insert", text: `INSERT INTO messages_fts (rowid, body) VALUES ` + values(n, 2)}
		}
	}
	return append(append([]*query{q.messageAt, q.bumpChange, q.edit, q.tombstone, q.ftsDelete, q.ftsPut, q.keyAt, q.keyPut}, q.ftsInsert[:]...), append(append(append(q.reactions.all(), q.replies.all()...), q.pins.all()...), q.search.all()...)...)
}

// changeReads are the readers' statements of changed_after and search.
type changeReads struct {
	changed, roomNum, searchRoom, search *query
	// reactions are the reads of reactions.go; thread the replies of a
	// root (replies.go).
	reactions reactionReads
	thread    *query
}

func (q *changeReads) all() []*query {
	if q.changed == nil {
		*q = changeReads{
			// The partial index messages_change holds only changed
			// messages; "change > 0" lets the planner use it.
			changed: &query{kind: "changed", text: `SELECT ` + msgCols + `, change_seq FROM messages
				WHERE room_id = ? AND change > 0 AND change > ? ORDER BY change LIMIT ?`},
			roomNum: &query{kind: "room_num", text: `SELECT num FROM rooms WHERE id = ?`},
			searchRoom: &query{kind: "search_room", text: `SELECT ` + msgColsOf("m") + `
				FROM messages_fts f CROSS JOIN messages m ON m.room_id = ?1 AND m.seq = (f.rowid & ` + seqMask + `)
				WHERE messages_fts MATCH ?2 AND f.rowid >= ?3 AND f.rowid < ?4 AND m.deleted_at IS NULL
				ORDER BY f.rowid DESC LIMIT ?5`},
			// The user's rooms are read once into a set; each match of
			// the index in one of them joins its room and message by key.
			search: &query{kind: "search", text: `SELECT ` + msgColsOf("m") + `, ` + roomColsOf("r") + `
				FROM messages_fts f
				CROSS JOIN rooms r ON r.num = (f.rowid >> 36)
				CROSS JOIN messages m ON m.room_id = r.id AND m.seq = (f.rowid & ` + seqMask + `)
				WHERE messages_fts MATCH ?2
					AND (f.rowid >> 36) IN (SELECT rr.num FROM members mb JOIN rooms rr ON rr.id = mb.room_id WHERE mb.user_id = ?1)
					AND (m.sent_at, m.room_id, m.seq) < (?3, ?4, ?5) AND m.deleted_at IS NULL
				ORDER BY m.sent_at DESC, m.room_id DESC, m.seq DESC LIMIT ?6`},
		}
	}
	if q.thread == nil {
		q.thread = &query{kind: "replies", text: `SELECT ` + msgCols + ` FROM messages
			WHERE room_id = ? AND reply_seq = ? AND seq > ? AND reply_seq > 0 ORDER BY seq LIMIT ?`}
	}
	return append([]*query{q.changed, q.roomNum, q.searchRoom, q.search, q.thread}, q.reactions.all()...)
}

func msgColsOf(a string) string {
	return a + ".id, " + a + ".room_id, " + a + ".seq, " + a + ".sender_id, " + a + ".sender_name, " + a + ".body, " +
		a + ".client_id, " + a + ".sent_at, " + a + ".edited_at, " + a + ".deleted_at, " + a + ".change, " + a + ".reactions, " +
		a + ".reply_seq, " + a + ".reply_sender, " + a + ".reply_excerpt, " + a + ".thread, " + a + ".files, " +
		a + ".pinned_by, " + a + ".pinned_at, " + a + ".pin_change, " + a + ".mentions"
}

func roomColsOf(a string) string {
	return a + ".id, " + a + ".kind, " + a + ".title, " + a + ".capacity, " + a + ".member_count, " + a + ".last_seq, " +
		a + ".last_activity_at, " + a + ".created_at, coalesce(" + a + ".direct_key, ''), " + a + ".last_change, " + a + ".retention_seconds"
}

// messageAt returns message seq of the room and its room's number, or
// CodeNotFound.
func (w *wtx) messageAt(roomID string, seq int64) (parley.Message, int64, error) {
	var num int64
	m, err := scanMessage(scanWith{w.row(w.s.wq.changes.messageAt, roomID, seq), []any{&num}})
	if errors.Is(err, sql.ErrNoRows) {
		return m, 0, parley.Errorf(parley.CodeNotFound, "message not found")
	}
	return m, num, err
}

// scanWith scans a row whose leading columns (a message's, a key's) are
// followed by more.
type scanWith struct {
	s    scanner
	more []any
}

func (sw scanWith) Scan(dest ...any) error { return sw.s.Scan(append(dest, sw.more...)...) }

// nextChange moves the room's last_change and returns the room after it.
func (w *wtx) nextChange(roomID string) (parley.Room, error) {
	return scanRoom(w.row(w.s.wq.changes.bumpChange, roomID))
}

// changeKey returns the stored idempotency key of a change (ok false when
// there is none, and for an empty clientID).
func (w *wtx) changeKey(roomID, userID, clientID string) (k parley.ChangeKey, ok bool, err error) {
	if clientID == "" {
		return k, false, nil
	}
	err = w.row(w.s.wq.changes.keyAt, roomID, userID, clientID).Scan(&k.Seq, &k.Deleted, &k.Change)
	if errors.Is(err, sql.ErrNoRows) {
		return k, false, nil
	}
	return k, err == nil, err
}

// putChangeKey stores the idempotency key of an applied change, when it
// has one.
func (w *wtx) putChangeKey(roomID, userID, clientID string, k parley.ChangeKey) error {
	if clientID == "" {
		return nil
	}
	_, err := w.exec(w.s.wq.changes.keyPut, roomID, userID, clientID, k.Seq, k.Deleted, k.Change)
	return err
}

// repeat answers a change whose key is stored: the key's message as it is
// now, or the conflict of a reused key (parley.ChangeKey.Repeat).
func (w *wtx) repeat(k parley.ChangeKey, clientID, roomID string, seq int64, deletion bool, body string) (result, error) {
	cur, _, err := w.messageAt(roomID, k.Seq)
	if err != nil {
		return result{}, err
	}
	if err := k.Repeat(clientID, seq, deletion, body, &cur); err != nil {
		return result{}, err
	}
	return result{msg: cur}, nil
}

// EditMessage implements parley.Store.
func (s *Store) EditMessage(ctx context.Context, e parley.Edit) (parley.Message, error) {
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		if k, ok, err := w.changeKey(e.RoomID, e.EditorID, e.ClientID); err != nil || ok {
			if err != nil {
				return result{}, fmt.Errorf("edit: key: %w", err)
			}
			return w.repeat(k, e.ClientID, e.RoomID, e.Seq, false, e.Body)
		}
		old, num, err := w.messageAt(e.RoomID, e.Seq)
		switch {
		case err != nil:
			return result{}, err
		case old.SenderID != e.EditorID:
			return result{}, parley.Errorf(parley.CodeForbidden, "only its sender may edit a message")
		case old.Deleted():
			return result{}, parley.Errorf(parley.CodeConflict, "the message is deleted")
		}
		r, err := w.nextChange(e.RoomID)
		if err != nil {
			return result{}, fmt.Errorf("edit: %w", err)
		}
		at := fromMicro(w.now())
		m := old
		m.Body, m.EditedAt, m.Change, m.Mentions = e.Body, &at, r.LastChange, e.Mentions
		if _, err := w.exec(w.s.wq.changes.edit, m.Body, at.UnixMicro(), m.Change, mentionsText(m.Mentions), m.RoomID, m.Seq); err != nil {
			return result{}, fmt.Errorf("edit: %w", err)
		}
		if err := w.reindex(m.RoomID, num, m.Seq, old.Body, m.Body); err != nil {
			return result{}, fmt.Errorf("edit: index: %w", err)
		}
		w.s.ck.erased() // the old text: edits keep no history
		if err := w.refreshExcerpts(&m); err != nil {
			return result{}, fmt.Errorf("edit: replies: %w", err)
		}
		if err := w.putChangeKey(e.RoomID, e.EditorID, e.ClientID, parley.ChangeKey{Seq: m.Seq, Change: m.Change}); err != nil {
			return result{}, fmt.Errorf("edit: key: %w", err)
		}
		w.emit(parley.Event{Kind: parley.EventEdited, Room: r, UserID: e.EditorID, Message: m})
		return result{msg: m}, nil
	})
	return res.msg, err
}

// DeleteMessage implements parley.Store. The tombstone keeps its client_id,
// so that a resend of it returns the tombstone rather than storing the
// text again.
func (s *Store) DeleteMessage(ctx context.Context, d parley.Deletion) (parley.Message, bool, error) {
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		if k, ok, err := w.changeKey(d.RoomID, d.ActorID, d.ClientID); err != nil || ok {
			if err != nil {
				return result{}, fmt.Errorf("delete: key: %w", err)
			}
			return w.repeat(k, d.ClientID, d.RoomID, d.Seq, true, "")
		}
		old, num, err := w.messageAt(d.RoomID, d.Seq)
		switch {
		case err != nil:
			return result{}, err
		case old.SenderID != d.ActorID && !d.Moderator:
			return result{}, parley.Errorf(parley.CodeForbidden, "only its sender or the room's owner or an admin may delete a message")
		case old.Deleted():
			return result{msg: old}, nil
		}
		r, err := w.nextChange(d.RoomID)
		if err != nil {
			return result{}, fmt.Errorf("delete: %w", err)
		}
		at := fromMicro(w.now())
		m := old
		m.Body, m.DeletedAt, m.Change, m.Reactions, m.Files, m.Pinned, m.Mentions = "", &at, r.LastChange, nil, "", nil, ""
		if _, err := w.exec(w.s.wq.changes.tombstone, at.UnixMicro(), m.Change, m.RoomID, m.Seq); err != nil {
			return result{}, fmt.Errorf("delete: %w", err)
		}
		if _, err := w.exec(w.s.wq.changes.reactions.clear, m.RoomID, m.Seq); err != nil {
			return result{}, fmt.Errorf("delete: reactions: %w", err)
		}
		if err := w.refreshExcerpts(&m); err != nil {
			return result{}, fmt.Errorf("delete: replies: %w", err)
		}
		if err := w.reindex(m.RoomID, num, m.Seq, old.Body, ""); err != nil {
			return result{}, fmt.Errorf("delete: index: %w", err)
		}
		w.s.ck.erased()
		if err := w.putChangeKey(d.RoomID, d.ActorID, d.ClientID, parley.ChangeKey{Seq: m.Seq, Deleted: true, Change: m.Change}); err != nil {
			return result{}, fmt.Errorf("delete: key: %w", err)
		}
		w.emit(parley.Event{Kind: parley.EventDeleted, Room: r, UserID: d.ActorID, Message: m})
		return result{msg: m, ok: true}, nil
	})
	return res.msg, res.ok, err
}

// Changed implements parley.Store.
func (s *Store) Changed(ctx context.Context, roomID string, after int64, limit int) ([]parley.Message, error) {
	limit = parley.ClampPageLimit(limit)
	q := s.rq.changes.changed
	q.count()
	rows, err := q.stmt.QueryContext(ctx, roomID, after, limit)
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
func collectMessages(rows *sql.Rows, capacity int, changeSeq bool) ([]parley.Message, error) {
	defer rows.Close()
	msgs := make([]parley.Message, 0, capacity)
	var at int64
	var sc scanner = rows
	if changeSeq {
		sc = scanWith{rows, []any{&at}}
	}
	for rows.Next() {
		m, err := scanMessage(sc)
		if err != nil {
			return nil, err
		}
		m.ChangeSeq = at
		msgs = append(msgs, m)
	}
	return msgs, rows.Err()
}
