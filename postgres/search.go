package postgres

import (
	"context"
	"math"
	"strings"
	"time"

	"parley"
)

// A message's search vector (tsv) is written by the indexer after its send
// (indexer.go), and in the statement that edits or deletes it (edits.go);
// a search reads it with plainto_tsquery and skips tombstones.

// tsvOf returns the expression of a body's search vector: the 'simple'
// configuration (lower-cased words, no stemming, no stop words), or NULL
// when the index is off (Config.NoSearchIndex).
func tsvOf(index bool) func(body string) string {
	if !index {
		return func(string) string { return "NULL::tsvector" }
	}
	return func(body string) string { return "to_tsvector('simple', " + body + ")" }
}

// searchReads are the readers' statements of search.
type searchReads struct {
	searchRoom, search *query
}

func newSearchReads(m *metrics) searchReads {
	q := searchReads{
		// plainto_tsquery ANDs the words and knows no operators: the
		// user's words cannot be a query of their own.
		searchRoom: &query{kind: "search_room", text: `SELECT ` + msgCols + ` FROM messages
			WHERE room_id = $1 AND tsv @@ plainto_tsquery('simple', $2) AND seq < $3 AND deleted_at IS NULL
			ORDER BY seq DESC LIMIT $4`},
		search: &query{kind: "search", text: `SELECT ` + msgColsOf("m") + `, ` + roomOut("r") + `
			FROM messages m
			JOIN members mb ON mb.room_id = m.room_id AND mb.user_id = $1
			JOIN rooms r ON r.id = m.room_id
			WHERE m.tsv @@ plainto_tsquery('simple', $2) AND (m.sent_at, m.room_id, m.seq) < ($3, $4, $5) AND m.deleted_at IS NULL
			ORDER BY m.sent_at DESC, m.room_id DESC, m.seq DESC LIMIT $6`},
	}
	bind(m, q.searchRoom, q.search)
	return q
}

// SearchRoom implements parley.Store.
func (s *Store) SearchRoom(ctx context.Context, roomID string, q parley.Query, before int64, limit int) ([]parley.Message, error) {
	limit = parley.ClampPageLimit(limit)
	if len(q.Terms) == 0 {
		return nil, parley.Errorf(parley.CodeInvalid, "empty search")
	}
	if before <= 0 {
		before = math.MaxInt64
	}
	rows, err := s.query(ctx, s.rq.search.searchRoom, roomID, tsText(q.Terms), before, limit)
	if err != nil {
		return nil, s.readErr("search", err)
	}
	msgs, err := collectMessages(rows, limit, false)
	if err != nil {
		return nil, s.readErr("search", err)
	}
	if len(msgs) == 0 {
		if err := s.roomExists(ctx, roomID); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// noCursor sorts after every message: the first page of a search.
var noCursor = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)

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
	if !ok {
		c = parley.SearchCursor{At: noCursor}
	}
	rows, err := s.query(ctx, s.rq.search.search, userID, tsText(q.Terms), c.At, c.RoomID, c.Seq, limit+1)
	if err != nil {
		return nil, "", s.readErr("search", err)
	}
	defer rows.Close()
	hits := make([]parley.SearchHit, 0, limit+1)
	for rows.Next() {
		var h parley.SearchHit
		if err := rows.Scan(append(messageDest(&h.Message), roomDest(&h.Room)...)...); err != nil {
			return nil, "", s.readErr("search", err)
		}
		fixMessage(&h.Message)
		fixRoom(&h.Room)
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

// tsText returns the words of a parsed query separated by spaces, for
// plainto_tsquery, which ANDs them and knows no operators.
func tsText(terms []string) string { return strings.Join(terms, " ") }
