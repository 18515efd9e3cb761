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
// rooms keeps the matches whose room number is one of theirs. The
// indexer writes the entries of new messages after their commit
// (indexer.go); both searches join the message and skip tombstones.

// seqMask keeps the seq of a full-text key (num << 36 | seq).
const seqMask = "68719476735"

// ftsKey is the full-text key of message seq of room number num.
func ftsKey(num, seq int64) int64 { return num<<36 + seq }

// reindex replaces message seq of room (number num) in the index: its old
// text out, its new one ("" for none, a tombstone) in. A message past its
// room's search position is not in the index yet: the indexer will index
// its text as it is then (indexer.go), so nothing changes here.
func (w *wtx) reindex(room string, num, seq int64, old, body string) error {
	if w.s.idx == nil {
		return nil
	}
	if in, err := w.indexedAt(room, seq); err != nil || !in {
		return err
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
	msgs, err := collectMessages(rows, limit, false)
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
		var x extras
		m := &h.Message
		dest := append([]any{&m.ID, &m.RoomID, &m.Seq, &m.SenderID, &m.SenderName, &m.Body, &m.ClientID, &sent,
			&edited, &deleted, &m.Change}, x.dest()...)
		if err := rows.Scan(append(dest, roomDest(&h.Room, &rat, &rcreated)...)...); err != nil {
			return nil, "", s.readErr("search", err)
		}
		m.SentAt = fromMicro(sent)
		m.EditedAt, m.DeletedAt = optMicro(edited), optMicro(deleted)
		if err := x.fill(m); err != nil {
			return nil, "", s.readErr("search", err)
		}
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
