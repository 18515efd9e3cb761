package postgres

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"parley"
	"parley/groupcommit"
	"parley/storagefull"
)

// writeOp is one write of a batch. The writer calls queue, then decode, on
// each attempt of the batch; an op is used by the writer goroutine only.
type writeOp interface {
	// lockRoom is the existing room the write changes, locked at the start
	// of the batch, or "" when it changes none.
	lockRoom() string
	// queue adds the write's one statement to the batch; now is its time.
	queue(b *pgx.Batch, q *writeQueries, now time.Time)
	// decode reads the statement's result: the write's outcome and its
	// events, a *parley.Error for a logical failure, or the statement's
	// error.
	decode(row pgx.Row) (result, []parley.Event, error)
	// shard is the key that picks the write's writer: the writes to one
	// room, and those that race for one key, go through one writer. A
	// write that may change rows of another shard is a crossShard.
	shard() string
}

// messageChanger is a write that changes a stored message of its room
// (lockRoom): Config.BeforeChanges hears of it before its batch runs.
type messageChanger interface {
	changesMessage()
}

// announceChanges hands the rooms of the batch's message changes to
// Config.BeforeChanges, if any, and returns what it returned (nil when
// there is nothing to tell).
func (s *Store) announceChanges(batch []*groupcommit.Request[writeOp, result]) func(committed bool) {
	if s.before == nil {
		return nil
	}
	var rooms map[string]int
	for _, r := range batch {
		if _, ok := r.In.(messageChanger); ok {
			if rooms == nil {
				rooms = map[string]int{}
			}
			rooms[r.In.lockRoom()]++
		}
	}
	if rooms == nil {
		return nil
	}
	return s.before(rooms)
}

// crossShard is a write that may change rows of another shard's writes: it
// says so, and its batch runs with no other batch of the node in flight
// (Store.fence), so that the tickets of two batches in flight at once
// never need an order (see sequencer).
type crossShard interface {
	crossShard() bool
}

// result is the outcome of a write; each write fills what it returns.
type result struct {
	user   parley.User
	room   parley.Room
	member parley.Member
	msg    parley.Message
	ok     bool // created, joined
}

// Retry bounds of a batch that hit a deadlock, a serialization failure or a
// unique-key race with another node.
const (
	maxAttempts  = 12
	retryBackoff = 2 * time.Millisecond
)

// write runs op in the next batch of its writer and waits until it is
// committed.
func (s *Store) write(ctx context.Context, op writeOp) (result, error) {
	if s.live.isDown() && !s.closed.Load() {
		// The store does not answer (liveness.go): refused at once
		// rather than after WriteTimeout.
		return result{}, s.out.failed(errNoAnswer, true)
	}
	res, err := s.w[s.writerOf(op.shard())].Do(ctx, op)
	return res, s.writeErr(ctx, err)
}

// writeErr translates the error of a write from its group-commit writer:
// errClosed once closed, unavailable while PostgreSQL is unreachable
// (outage) or its disk is full (storagefull.State). A nil error or a write's own
// *parley.Error means its batch was committed.
func (s *Store) writeErr(ctx context.Context, err error) error {
	var pe *parley.Error
	switch {
	case err == nil, errors.As(err, &pe):
		s.out.ok()
		s.full.OK()
	case errors.Is(err, groupcommit.ErrClosed), s.closed.Load():
		return errClosed
	case errors.Is(err, context.Canceled) && ctx.Err() != nil:
		// The caller went away.
	case diskFull(err):
		s.out.ok()                                     // it answered
		return s.full.Refuse(storagefull.Request, err) // the indexer's statements are not writes (indexer.go)
	default:
		return s.out.failed(err, true)
	}
	return err
}

// writerOf returns the index of the writer of the writes whose shard is
// key.
func (s *Store) writerOf(key string) int {
	if len(s.w) == 1 {
		return 0
	}
	h := fnv.New32a()
	h.Write([]byte(key))
	return int(h.Sum32() % uint32(len(s.w)))
}

// commit is the group-commit function: it runs the batch in one
// transaction and returns what the writer calls once the batch is
// committed, before the batch's callers return: handing its events to
// OnCommit in the node's commit order.
//
// A batch that fails for a reason of its own (a deadlock with another node,
// a serialization failure, a unique key another node took meanwhile) runs
// again whole: on the next attempt each write's checks see what the other
// node committed. A write whose statement fails for a reason of its own (a
// foreign key, bad input) is dropped with its error and the rest runs
// again; when that statement held a run of sends, the batch first runs
// again with a statement per send, to find the one to drop. Anything else
// fails the batch.
func (s *Store) commit(batch []*groupcommit.Request[writeOp, result]) (func(), error) {
	after := s.announceChanges(batch)
	pending := batch
	sends := s.onlySends(batch)
	single := false
	alone := slices.ContainsFunc(batch, func(r *groupcommit.Request[writeOp, result]) bool {
		c, ok := r.In.(crossShard)
		return ok && c.crossShard()
	})
	for attempt := 1; ; attempt++ {
		var tr tried
		var err error
		if alone {
			if !s.fence.TryLock() {
				if s.fenceWait != nil {
					s.fenceWait()
				}
				s.fence.Lock()
			}
		} else {
			s.fence.RLock()
		}
		if sends != nil {
			tr, err = s.trySends(pending, sends)
		} else {
			tr, err = s.tryBatch(pending, single)
		}
		if alone {
			s.fence.Unlock()
		} else {
			s.fence.RUnlock()
		}
		if err == nil {
			s.committed(tr.events)
			for i, r := range pending {
				if tr.outs != nil { // trySends set Out itself
					r.Out, r.Err = tr.outs[i].res, tr.outs[i].err
				}
			}
			var emit func()
			if s.onCommit != nil && len(tr.events) > 0 {
				events := tr.events
				emit = func() { s.onCommit(events) }
			}
			if after != nil {
				onCommit := emit
				emit = func() {
					if onCommit != nil {
						onCommit()
					}
					after(true)
				}
			}
			ticket := tr.ticket
			return func() { s.seq.done(ticket, emit) }, nil
		}
		if tr.ticket != noTicket {
			s.seq.done(tr.ticket, nil)
		}
		failed := tr.failed
		code := pgCode(err)
		class := code[:min(2, len(code))]
		switch {
		case sends != nil && (errors.Is(err, errSendChecks) || class == "22" || class == "23"):
			// The general path gives each send its outcome.
			sends = nil
		case (code == "40001" || code == "40P01" || code == "23505") && attempt < maxAttempts:
			s.m.retries.Inc()
			time.Sleep(rand.N(retryBackoff * time.Duration(attempt)))
		case failed == failedRun && (class == "22" || class == "23"):
			single = true
		case failed >= 0 && (class == "22" || class == "23"):
			pending[failed].Err = opError(err, code)
			pending = slices.Delete(slices.Clone(pending), failed, failed+1)
			if len(pending) == 0 {
				if after != nil {
					after(false)
				}
				return nil, nil
			}
		default:
			if after != nil && tr.ticket == noTicket { // no COMMIT was sent: nothing committed
				after(false)
			}
			return nil, err
		}
	}
}

// outcome is one write's result in an attempt.
type outcome struct {
	res result
	err error
}

// noTicket is tryBatch's ticket when it failed before its commit.
const noTicket = ^uint64(0)

// Values of tryBatch's failed index that name no single write.
const (
	failedBatch = -1 // the batch failed as a whole
	failedRun   = -2 // a statement of several sends failed
)

// errShortResult is a statement of several sends that did not return a row
// for each.
var errShortResult = errors.New("send batch: a result row is missing")

// tried is the outcome of one attempt of a batch (tryBatch).
type tried struct {
	// outs and events are each write's outcome and the batch's events,
	// once it committed; trySends leaves outs nil and sets each request's
	// Out itself.
	outs   []outcome
	events []parley.Event
	// failed, when the attempt failed, is the index of the write whose
	// statement failed, failedRun or failedBatch.
	failed int
	// ticket is the attempt's place in the sequencer once it sent COMMIT,
	// whatever the outcome (the caller must pass it to done); noTicket
	// before.
	ticket uint64
}

// stmt is one statement of a batch: it runs the writes reqs[lo:hi], one,
// or a run of sends.
type stmt struct {
	lo, hi int
	sends  []*send
}

// tryBatch runs reqs in one transaction, sent as one pipeline: BEGIN, the
// lock of the rooms the batch changes, the writes in order, one statement
// each except that a run of sends is one statement unless single is set,
// and COMMIT. One round trip, so that the rooms' locks are held for the
// statements and the commit only. A statement's error leaves the
// transaction failed, the COMMIT not run (or rolling back): the batch may
// run again. A logical failure is a write's result row, committed with the
// rest. On failure it has rolled back, except after an error read in Go
// from a statement that did not fail (cannot happen: a result PostgreSQL
// gave in its own types, or a run of sends short of a row), when the
// outcome is unknown as with a lost connection; see tried for what it
// returns.
func (s *Store) tryBatch(reqs []*groupcommit.Request[writeOp, result], single bool) (tried, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.writeTimeout)
	defer cancel()
	b, locked, stmts := s.queueBatch(reqs, single)
	s.wq.commit.count()
	b.Queue("commit")
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return tried{failed: failedBatch, ticket: noTicket}, fmt.Errorf("acquire: %w", err)
	}
	defer conn.Release()
	// The ticket goes before the pipeline, which holds the COMMIT (see
	// sequencer for why this order is the commit order).
	ticket := s.seq.ticket()
	br := conn.SendBatch(ctx, b)
	tx := br.Tx()
	tr, err := decodeBatch(br, reqs, stmts, locked)
	if err == nil {
		tr.failed = failedBatch
		if err = commitResult(br); err == nil {
			err = br.Close()
		}
	}
	if err != nil {
		br.Close()
		s.wq.rollback.count()
		tx.Rollback(ctx) // when the COMMIT ran, a no-op
		return tried{failed: tr.failed, ticket: ticket}, err
	}
	tr.ticket = ticket
	return tr, nil
}

// queueBatch builds the pipeline of tryBatch but for COMMIT: BEGIN, the
// lock of the rooms (locked: there are some), and the writes' statements.
func (s *Store) queueBatch(reqs []*groupcommit.Request[writeOp, result], single bool) (b *pgx.Batch, locked bool, stmts []stmt) {
	b = &pgx.Batch{}
	s.wq.begin.count()
	b.BeginTx(pgx.TxOptions{})
	rooms := make([]string, 0, len(reqs))
	for _, r := range reqs {
		if id := r.In.lockRoom(); id != "" {
			rooms = append(rooms, id)
		}
	}
	slices.Sort(rooms)
	rooms = slices.Compact(rooms)
	if len(rooms) > 0 {
		s.wq.lockRooms.count()
		b.Queue(s.wq.lockRooms.text, rooms)
	}
	for i := 0; i < len(reqs); {
		st := stmt{lo: i, hi: i + 1}
		for j := i; !single && j < len(reqs); j++ {
			o, ok := reqs[j].In.(*send)
			if !ok {
				break
			}
			st.sends, st.hi = append(st.sends, o), j+1
		}
		if len(st.sends) > 1 {
			queueSends(b, s.wq, st.sends, s.now)
		} else {
			st.sends = nil
			reqs[i].In.queue(b, s.wq, s.now())
		}
		stmts = append(stmts, st)
		i = st.hi
	}
	return b, len(rooms) > 0, stmts
}

// decodeBatch reads the results of queueBatch's statements: each write's
// outcome and the events, or on an error the index of what failed
// (tried.failed).
func decodeBatch(br pgx.BatchResults, reqs []*groupcommit.Request[writeOp, result], stmts []stmt, locked bool) (tried, error) {
	if _, err := br.Exec(); err != nil {
		return tried{failed: failedBatch}, fmt.Errorf("begin: %w", err)
	}
	if locked {
		var n int
		if err := br.QueryRow().Scan(&n); err != nil {
			return tried{failed: failedBatch}, fmt.Errorf("lock rooms: %w", err)
		}
	}
	tr := tried{outs: make([]outcome, 0, len(reqs))}
	for _, st := range stmts {
		if st.sends != nil {
			o, evs, err := decodeSends(br, st.sends)
			if err != nil {
				if pgCode(err) != "" {
					return tried{failed: failedRun}, err
				}
				return tried{failed: failedBatch}, err
			}
			tr.outs, tr.events = append(tr.outs, o...), append(tr.events, evs...)
			continue
		}
		res, evs, err := reqs[st.lo].In.decode(br.QueryRow())
		var pe *parley.Error
		switch {
		case err == nil:
			tr.outs = append(tr.outs, outcome{res: res})
			tr.events = append(tr.events, evs...)
		case errors.As(err, &pe):
			tr.outs = append(tr.outs, outcome{err: err})
		case pgCode(err) != "":
			return tried{failed: st.lo}, err
		default:
			return tried{failed: failedBatch}, err
		}
	}
	return tr, nil
}

// committed wakes the search indexer for a committed batch's new or
// changed messages and calls the afterCommit hook of tests with its events.
func (s *Store) committed(events []parley.Event) {
	if s.idx != nil {
		s.idx.sent(events)
	}
	if s.afterCommit != nil {
		s.afterCommit(events)
	}
}

// pgCode returns the SQLSTATE of a PostgreSQL error in err's chain, "" if
// there is none.
func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// opError translates the error of one write's statement, by its SQLSTATE.
func opError(err error, code string) error {
	switch {
	case code == "23503": // foreign_key_violation: the user or room named is not there
		return parley.Errorf(parley.CodeNotFound, "user or room not found")
	case code == "23505":
		return parley.Errorf(parley.CodeConflict, "the write conflicts with a concurrent one")
	case code[:2] == "22": // data_exception: text PostgreSQL cannot store, a value out of range
		return parley.Errorf(parley.CodeInvalid, "invalid input")
	}
	return fmt.Errorf("write: %w", err)
}

// now returns the time of a write. The times a store hands out only grow,
// so that commit order and activity order agree within each writer, and so
// within each room, on this node. Between writers they may not: a batch
// takes its time before its commit, so with several writers a room's
// activity can be a batch's span older than another room's that committed
// before it. Readers compare activity times by value (room lists sort by
// them, the hot data keeps the latest), never by the order of commits.
func (s *Store) now() time.Time {
	for {
		last := s.lastNow.Load()
		t := parley.Now().UnixMicro()
		if t <= last {
			t = last + 1
		}
		if s.lastNow.CompareAndSwap(last, t) {
			return time.UnixMicro(t).UTC()
		}
	}
}
