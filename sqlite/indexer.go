package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"parley/storagefull"
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
// the positions). A room noted needlessly costs one lookup. A round waits
// indexGather after the first note unless a full round is behind, so
// that it covers several of the writer's batches: one commit and one
// FTS5 segment for them all.
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

// indexGather is how long the indexer lets sends gather before a round
// (gather): a small part of the lag's budget of a second.
const indexGather = 50 * time.Millisecond

// indexer is the Store's search indexer; Store.idx.
type indexer struct {
	s     *Store
	wake  chan struct{} // buffered 1: rooms were noted
	hurry chan struct{} // buffered 1: WaitIndexed waits, no gathering
	stop  chan struct{} // closed by Close
	done  chan struct{} // closed when run returns

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
		hurry: make(chan struct{}, 1),
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

// gather lets the sends of about indexGather gather before a round, unless
// a full round is behind already or WaitIndexed hurries it: a round over
// several batches of the writer costs each message less (fewer FTS5
// segments, one commit) than a round a batch.
func (x *indexer) gather() {
	if x.behind.Load() >= int64(x.batch) {
		return
	}
	t := time.NewTimer(indexGather)
	defer t.Stop()
	select {
	case <-t.C:
	case <-x.hurry:
	case <-x.stop:
	}
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
				x.gather()
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
	_, err := s.writeBy(context.Background(), storagefull.Indexer, func(w *wtx) (result, error) {
		// A batch may be run again (commit): start over each time.
		var err error
		again, sent, err = w.indexRooms(rooms, s.idx.batch, sent[:0])
		return result{}, err
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

// roomPos is a room of a round: its number, position and last seq, and
// how many messages the round read, up to which seq.
type roomPos struct {
	id              string
	num, pos, last  int64
	read, readUntil int64
}

// indexRooms is a round: up to budget messages of rooms after their
// positions, read in key order (rooms by number, then seq), which FTS5
// needs to keep the round's entries in one segment (a rowid lower than the
// one before makes it write out what it holds as a segment of its own,
// each merged again later); their entries written and the positions moved
// in grouped statements. It appends the messages' send times to sent and
// returns the rooms left unfinished.
func (w *wtx) indexRooms(rooms []string, budget int, sent []int64) (again []string, _ []int64, err error) {
	q := &w.s.wq.changes.search
	rps := make([]roomPos, 0, len(rooms))
	err = chunks(len(rooms), func(start, size, qi int) error {
		args := make([]any, size)
		for i, r := range rooms[start : start+size] {
			args[i] = r
		}
		rows, err := w.stmt(q.positions[qi]).Query(args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var rp roomPos
			if err := rows.Scan(&rp.id, &rp.num, &rp.pos, &rp.last); err != nil {
				return err
			}
			if rp.last > rp.pos {
				rps = append(rps, rp)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("search index: positions: %w", err)
	}
	slices.SortFunc(rps, func(a, b roomPos) int { return cmp.Compare(a.num, b.num) })
	// Each room's share of the budget, in key order: its messages after
	// its position up to readUntil (seqs have no holes).
	var moved []roomPos
	for _, rp := range rps {
		if budget == 0 {
			again = append(again, rp.id)
			continue
		}
		rp.read = min(rp.last-rp.pos, int64(budget))
		rp.readUntil = rp.pos + rp.read
		budget -= int(rp.read)
		if rp.readUntil < rp.last {
			again = append(again, rp.id)
		}
		moved = append(moved, rp)
	}
	// Their messages, one statement a chunk of rooms.
	args := w.args[:0]
	err = chunks(len(moved), func(start, size, qi int) error {
		rargs := make([]any, 0, 4*size)
		for _, rp := range moved[start : start+size] {
			rargs = append(rargs, rp.id, rp.pos, rp.readUntil, rp.num)
		}
		rows, err := w.stmt(q.after[qi]).Query(rargs...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var num, seq, at int64
			var body string
			var deleted bool
			if err := rows.Scan(&num, &seq, &body, &deleted, &at); err != nil {
				return err
			}
			sent = append(sent, at)
			if !deleted && body != "" {
				args = append(args, ftsKey(num, seq), body)
			}
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("search index: read: %w", err)
	}
	w.args = args
	err = chunks(len(args)/2, func(start, size, qi int) error {
		_, err := w.stmt(w.s.wq.changes.ftsInsert[qi]).Exec(args[2*start : 2*(start+size)]...)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("search index: insert: %w", err)
	}
	err = chunks(len(moved), func(start, size, qi int) error {
		margs := make([]any, 0, 2*size)
		for _, rp := range moved[start : start+size] {
			margs = append(margs, rp.id, rp.readUntil)
		}
		_, err := w.stmt(q.move[qi]).Exec(margs...)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("search index: move positions: %w", err)
	}
	return again, sent, nil
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
		for _, c := range []chan struct{}{s.idx.wake, s.idx.hurry} {
			select {
			case c <- struct{}{}:
			default:
			}
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
	position *query
	// positions reads the positions of a chunk of rooms, after their
	// messages in a range each, move moves their positions; one per chunk
	// size.
	positions, after, move [len(chunkSizes)]*query
}

func (q *searchWrites) all() []*query {
	if q.position == nil {
		*q = searchWrites{
			position: &query{kind: "search_position", text: `SELECT r.num, coalesce(p.seq, 0)
				FROM rooms r LEFT JOIN search_position p ON p.room_id = r.id WHERE r.id = ?`},
		}
		for i, n := range chunkSizes {
			q.positions[i] = &query{kind: "search_positions", text: `SELECT r.id, r.num, coalesce(p.seq, 0), r.last_seq
				FROM rooms r LEFT JOIN search_position p ON p.room_id = r.id WHERE r.id IN (?` + strings.Repeat(", ?", n-1) + `)`}
			// (room, position, up to, num) rows, rooms by num: the
			// messages in key order.
			q.after[i] = &query{kind: "search_unindexed", text: `SELECT v.column4, m.seq, m.body, m.deleted_at IS NOT NULL, m.sent_at
				FROM (VALUES ` + values(n, 4) + `) AS v
				CROSS JOIN messages m ON m.room_id = v.column1 AND m.seq > v.column2 AND m.seq <= v.column3
				ORDER BY v.column4, m.seq`}
			q.move[i] = &query{kind: "search_move", text: `INSERT INTO search_position (room_id, seq) VALUES ` + values(n, 2) + `
				ON CONFLICT (room_id) DO UPDATE SET seq = excluded.seq`}
		}
	}
	return append(append(append([]*query{q.position}, q.positions[:]...), q.after[:]...), q.move[:]...)
}
