package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"strings"

	"parley"
)

// The full-text index is the FTS5 table messages_fts (migration 0003): an
// external-content table whose key is num << 36 | seq, num being the room's
// number. A room's messages are one range of keys, so a search in a room
// is a range of the index read newest first, and a search over a user's
// rooms keeps the matches whose room number is one of theirs.

// seqMask keeps the seq of a full-text key (num << 36 | seq).
const seqMask = "68719476735"

// ftsKey is the full-text key of message seq of room number num.
func ftsKey(num, seq int64) int64 { return num<<36 + seq }

// indexMessages adds new messages to the full-text index, one grouped
// statement per chunk, in the send's transaction.
func (w *wtx) indexMessages(stored []*sendItem) error {
	if w.s.noIndex {
		return nil
	}
	return chunks(len(stored), func(start, size, qi int) error {
		args := w.args[:0]
		for _, it := range stored[start : start+size] {
			args = append(args, it.key, it.msg.Body)
		}
		w.args = args
		_, err := w.stmt(w.s.wq.changes.ftsInsert[qi]).Exec(args...)
		return err
	})
}

// reindex replaces message seq of room number num in the index: its old
// text out, its new one ("" for none, a tombstone) in.
func (w *wtx) reindex(num, seq int64, old, body string) error {
	if w.s.noIndex {
		return nil
	}
	key := ftsKey(num, seq)
	if _, err := w.exec(w.s.wq.changes.ftsDelete, key, old); err != nil {
		return err
	}
	if body == "" {
		return nil
	}
	_, err := w.exec(w.s.wq.changes.ftsPut, key, body)
	return err
}

// SearchRoom implements parley.Store.
func (s *Store) SearchRoom(ctx context.Context, roomID string, q parley.Query, before int64, limit int) ([]parley.Message, error) {
	limit = parley.ClampPageLimit(limit)
	if len(q.Terms) == 0 {
		return nil, parley.Errorf(parley.CodeInvalid, "empty search")
	}
	var num int64
	s.rq.changes.roomNum.count()
	err := s.rq.changes.roomNum.stmt.QueryRowContext(ctx, roomID).Scan(&num)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, errRoomNotFound(roomID)
	}
	if err != nil {
		return nil, s.readErr("search", err)
	}
	if before <= 0 || before > 1<<36 {
		before = 1 << 36
	}
	sq := s.rq.changes.searchRoom
	sq.count()
	rows, err := sq.stmt.QueryContext(ctx, roomID, ftsQuery(q.Terms), ftsKey(num, 0), ftsKey(num, before), limit)
	if err != nil {
		return nil, s.readErr("search", err)
	}
	msgs, err := collectMessages(rows, limit)
	if err != nil {
		return nil, s.readErr("search", err)
	}
	return msgs, nil
}

// Search implements parley.Store.
func (s *Store) Search(ctx context.Context, userID string, q parley.Query, cursor string, limit int) ([]parley.SearchHit, string, error) {
	c, ok, err := parley.ParseSearchCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	if len(q.Terms) == 0 {
		return nil, "", parley.Errorf(parley.CodeInvalid, "empty search")
	}
	limit = parley.ClampPageLimit(limit)
	at, room, seq := int64(math.MaxInt64), "", int64(0)
	if ok {
		at, room, seq = c.At.UnixMicro(), c.RoomID, c.Seq
	}
	sq := s.rq.changes.search
	sq.count()
	rows, err := sq.stmt.QueryContext(ctx, userID, ftsQuery(q.Terms), at, room, seq, limit+1)
	if err != nil {
		return nil, "", s.readErr("search", err)
	}
	defer rows.Close()
	hits := make([]parley.SearchHit, 0, limit+1)
	for rows.Next() {
		var h parley.SearchHit
		var sent, rat, rcreated int64
		var edited, deleted sql.NullInt64
		m := &h.Message
		var files sql.NullString
		dest := []any{&m.ID, &m.RoomID, &m.Seq, &m.SenderID, &m.SenderName, &m.Body, &m.ClientID, &sent,
			&edited, &deleted, &m.Change, &files}
		if err := rows.Scan(append(dest, roomDest(&h.Room, &rat, &rcreated)...)...); err != nil {
			return nil, "", s.readErr("search", err)
		}
		m.Files = parley.FileList(files.String)
		m.SentAt = fromMicro(sent)
		m.EditedAt, m.DeletedAt = optMicro(edited), optMicro(deleted)
		fixRoom(&h.Room, rat, rcreated)
		hits = append(hits, h)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.readErr("search", err)
	}
	next := ""
	if len(hits) > limit {
		hits = hits[:limit]
		next = parley.CursorAfter(hits[limit-1].Message).String()
	}
	return hits, next, nil
}

// ftsQuery returns the words of a parsed query in FTS5's query syntax:
// each word a quoted string, all of them required.
func ftsQuery(terms []string) string {
	var b strings.Builder
	for i, t := range terms {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(t, `"`, `""`)) // never needed: words hold no quote
		b.WriteByte('"')
	}
	return b.String()
}
