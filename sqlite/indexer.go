package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// # The search indexer
//
// Search trails the commit (design §5, issue 33): a send stores its
// messages and no full-text entry; the indexer writes the entries after,
// in batches of its own, so that the send's transaction costs what the
// message costs.
//
// Position. search_position (migration 0016) holds, per room, the seq up
// to which every message is in messages_fts (tombstones never are). A
// room's seqs have no holes and are handed out by the single writer in
// commit order, so "every message up to seq" is exact: there is no
// concurrent transaction that could commit a lower seq later. An indexer
// round is a write of the writer like any other: in one transaction it
// reads each room's messages after its position, writes their entries and
// moves the position to the last seq read. Its commit is durable as every
// write's is; a crash, SIGKILL included, before it loses the entries and
// the move together, and the next round (after Open) reads the same
// messages again: nothing missed, nothing indexed twice.
//
// Which rooms. The writer notes each room it stored messages in, after
// the commit (idx.sent); the indexer takes the noted rooms for its round
// and notes again the rooms it did not finish. Open notes every room
// whose last_seq is past its position (a crash loses the notes, never
// the positions). A room noted needlessly costs one lookup.
//
// Edits and deletions. They run on the writer, between rounds: an edit or
// a deletion of a message at or below its room's position changes its
// entry in the same transaction (the text it replaces is the text the
// index holds: the current one, which the round read under the same
// writer); one above the position changes nothing in the index, and the
// round that reaches the message indexes its text as it is then (none for
// a tombstone). So changes reach the index in change order, and a deleted
// message is out of the index when its DELETE returns; the search queries
// also skip tombstones (search.go).
//
// The lag is parley_search_lag_seconds (send time to the commit of the
// round that indexed the message) and parley_search_behind_messages
// (stored, not yet indexed). WaitIndexed waits for zero behind.

// DefaultSearchBatch is the default Config.SearchBatch: a round's
// transaction holds the writer while it indexes, so Sends wait at most
// about this many entries.
const DefaultSearchBatch = 2048

// indexer is the Store's search indexer; Store.idx.
type indexer struct {
	s    *Store
	wake chan struct{} // buffered 1: rooms were noted
	stop chan struct{} // closed by Close
	done chan struct{} // closed when run returns

	// mu guards dirty and round.
	mu sync.Mutex
	// dirty are the rooms that may have messages past their position.
	dirty map[string]struct{}
	// round is closed, and replaced, after each round of the indexer.
	round chan struct{}

	batch  int          // messages a round indexes at most (Config.SearchBatch)
	behind atomic.Int64 // messages stored and not indexed
	lag    prometheus.Histogram
	gauge  prometheus.GaugeFunc
}

func newIndexer(s *Store, batch int) *indexer {
	x := &indexer{
		s:     s,
		batch: batch,
		wake:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		dirty: map[string]struct{}{},
		round: make(chan struct{}),
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "parley_search_lag_seconds",
			Help:    "Time from a message's send to the commit of the search index round that made it findable.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14), // 1ms to 8s
		}),
	}
	x.gauge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "parley_search_behind_messages",
		Help: "Messages stored and not yet in the search index.",
	}, func() float64 { return float64(x.behind.Load()) })
	return x
}

// collectors are the indexer's metrics.
func (x *indexer) collectors() []prometheus.Collector {
	return []prometheus.Collector{x.lag, x.gauge}
}

// sent notes that n messages were committed in rooms. The writer calls it
// after the commit, under txMu (LOCKS.md).
func (x *indexer) sent(rooms map[string]struct{}, n int) {
	if n == 0 {
		return
	}
	x.behind.Add(int64(n))
	x.mu.Lock()
	for r := range rooms {
		x.dirty[r] = struct{}{}
	}
	x.mu.Unlock()
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// noteSent records the rooms of stored messages in the transaction, for
// idx.sent once it commits.
func (w *wtx) noteSent(stored []*sendItem) {
	if w.s.idx == nil || len(stored) == 0 {
		return
	}
	if w.sent == nil {
		w.sent = make(map[string]struct{}, 8)
	}
	for _, it := range stored {
		w.sent[it.msg.RoomID] = struct{}{}
	}
	w.nsent += len(stored)
}

// scan notes every room whose last_seq is past its position, and counts
// the messages behind: what Open does before the writer starts.
func (x *indexer) scan(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `SELECT r.id, r.last_seq - coalesce(p.seq, 0)
		FROM rooms r LEFT JOIN search_position p ON p.room_id = r.id
		WHERE r.last_seq > coalesce(p.seq, 0)`)
	if err != nil {
		return fmt.Errorf("search index: find rooms behind: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var n int64
		if err := rows.Scan(&id, &n); err != nil {
			return fmt.Errorf("search index: find rooms behind: %w", err)
		}
		x.dirty[id] = struct{}{}
		x.behind.Add(n)
	}
	return rows.Err()
}

// take returns the noted rooms and forgets them.
func (x *indexer) take() []string {
	x.mu.Lock()
	defer x.mu.Unlock()
	rooms := make([]string, 0, len(x.dirty))
	for r := range x.dirty {
		rooms = append(rooms, r)
	}
	clear(x.dirty)
	return rooms
}

// finished notes rooms again and tells the waiters a round ended.
func (x *indexer) finished(again []string) {
	x.mu.Lock()
	for _, r := range again {
		x.dirty[r] = struct{}{}
	}
	close(x.round)
	x.round = make(chan struct{})
	x.mu.Unlock()
}

// roundDone returns a channel closed at the end of the next round.
func (x *indexer) roundDone() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.round
}

// run is the indexer's goroutine: a round whenever rooms are noted, until
// stop. A failed round notes its rooms again and is retried after a pause
// (the store's writes fail the same way meanwhile: a full disk, a closed
// store).
func (x *indexer) run() {
	defer close(x.done)
	for {
		rooms := x.take()
		if len(rooms) == 0 {
			x.finished(nil)
			select {
			case <-x.wake:
				continue
			case <-x.stop:
				return
			}
		}
		again, err := x.s.indexRound(rooms)
		if err != nil {
			again = rooms
		}
		x.finished(again)
		if err != nil {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-x.stop:
				return
			}
		}
		select {
		case <-x.stop:
			return
		default:
		}
	}
}

// indexRound runs one round over rooms in one write of the writer, and
// returns the rooms it left unfinished (the round's budget ran out).
func (s *Store) indexRound(rooms []string) ([]string, error) {
	var again []string
	var sent []int64
	_, err := s.write(context.Background(), func(w *wtx) (result, error) {
		// A batch may be run again (commit): start over each time.
		again, sent = again[:0], sent[:0]
		budget := s.idx.batch
		for i, room := range rooms {
			if budget == 0 {
				again = append(again, rooms[i:]...)
				break
			}
			n, err := w.indexRoom(room, budget, &sent)
			if err != nil {
				return result{}, fmt.Errorf("search index: room %s: %w", room, err)
			}
			if n == budget {
				again = append(again, room)
			}
			budget -= n
		}
		return result{}, nil
	})
	if err != nil {
		return nil, err
	}
	now := time.Now().UnixMicro()
	for _, at := range sent {
		s.idx.lag.Observe(float64(max(0, now-at)) / 1e6)
	}
	s.idx.behind.Add(-int64(len(sent)))
	return again, nil
}

// indexRoom indexes up to limit messages of room after its position, moves
// the position past them, appends their send times to sent and returns how
// many it read.
func (w *wtx) indexRoom(room string, limit int, sent *[]int64) (int, error) {
	q := &w.s.wq.changes.search
	var num, pos int64
	if err := w.row(q.position, room).Scan(&num, &pos); err != nil {
		return 0, fmt.Errorf("position: %w", err)
	}
	rows, err := w.stmt(q.after).Query(room, pos, limit)
	if err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	args := w.args[:0]
	n, last := 0, pos
	for rows.Next() {
		var seq, at int64
		var body string
		var deleted bool
		if err := rows.Scan(&seq, &body, &deleted, &at); err != nil {
			rows.Close()
			return 0, fmt.Errorf("read: %w", err)
		}
		n, last = n+1, seq
		*sent = append(*sent, at)
		if !deleted && body != "" {
			args = append(args, ftsKey(num, seq), body)
		}
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read: %w", err)
	}
	w.args = args
	if n == 0 {
		return 0, nil
	}
	err = chunks(len(args)/2, func(start, size, qi int) error {
		_, err := w.stmt(w.s.wq.changes.ftsInsert[qi]).Exec(args[2*start : 2*(start+size)]...)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("insert: %w", err)
	}
	if _, err := w.exec(q.move, room, last); err != nil {
		return 0, fmt.Errorf("move: %w", err)
	}
	return n, nil
}

// indexedAt reports whether message seq of room is at or below its room's
// position: whether its text is in the index (unless a tombstone).
func (w *wtx) indexedAt(room string, seq int64) (bool, error) {
	var num, pos int64
	if err := w.row(w.s.wq.changes.search.position, room).Scan(&num, &pos); err != nil {
		return false, fmt.Errorf("search position: %w", err)
	}
	return seq <= pos, nil
}

// WaitIndexed waits until every message committed before it was called is
// in the search index (the indexer's position passed it), or ctx ends.
// With Config.NoSearchIndex it returns at once. Tests use it where a
// search must see what was just sent.
func (s *Store) WaitIndexed(ctx context.Context) error {
	if s.idx == nil {
		return nil
	}
	for {
		done := s.idx.roundDone()
		if s.idx.behind.Load() <= 0 {
			return nil
		}
		select {
		case s.idx.wake <- struct{}{}:
		default:
		}
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("sqlite: wait for the search index (%d messages behind): %w", s.idx.behind.Load(), ctx.Err())
		}
	}
}

// SearchBehind returns how many stored messages are not in the search
// index yet (parley_search_behind_messages).
func (s *Store) SearchBehind() int64 {
	if s.idx == nil {
		return 0
	}
	return s.idx.behind.Load()
}

// searchWrites are the writer's statements of the indexer.
type searchWrites struct {
	position, after, move *query
}

func (q *searchWrites) all() []*query {
	if q.position == nil {
		*q = searchWrites{
			position: &query{kind: "search_position", text: `SELECT r.num, coalesce(p.seq, 0)
				FROM rooms r LEFT JOIN search_position p ON p.room_id = r.id WHERE r.id = ?`},
			after: &query{kind: "search_unindexed", text: `SELECT seq, body, deleted_at IS NOT NULL, sent_at
				FROM messages WHERE room_id = ? AND seq > ? ORDER BY seq LIMIT ?`},
			move: &query{kind: "search_move", text: `INSERT INTO search_position (room_id, seq) VALUES (?, ?)
				ON CONFLICT (room_id) DO UPDATE SET seq = excluded.seq`},
		}
	}
	return []*query{q.position, q.after, q.move}
}
