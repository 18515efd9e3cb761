package postgres

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/prometheus/client_golang/prometheus"

	"parley"
)

// # The search indexer
//
// Search trails the commit (design §5, issue 33): a send stores its
// messages with no search vector (tsv NULL); the indexer computes the
// vectors after, in batches of its own, so that the send's statement
// costs what the message costs.
//
// Position. The indexer's position is not a counter but each message's
// own state: a message is indexed when its tsv is set, and the partial
// index messages_unindexed (migration 0014) holds exactly the messages
// that are not: tsv NULL and not deleted. A position kept as a number
// (a sequence, a per-room seq) would skip on PostgreSQL: transactions
// take their numbers in one order and commit in another, so a reader that
// has seen number n committed cannot conclude that every number below n
// is; a message committed later with a lower number would be passed for
// good. A state cannot be passed: a message that commits late is in
// messages_unindexed from its commit until a round indexes it, whatever
// committed around it. A round is one statement,
//
//	WITH todo AS (SELECT ... FROM messages WHERE tsv IS NULL AND
//	    deleted_at IS NULL ORDER BY sent_at LIMIT n FOR UPDATE SKIP LOCKED)
//	UPDATE messages SET tsv = to_tsvector('simple', body) FROM todo ...
//
// in its own transaction: the vector and the "position" (the row leaving
// messages_unindexed) are one write, so a crash or a SIGKILL before the
// commit loses both and the next round does them again, and one after it
// keeps both: nothing missed, nothing indexed twice.
//
// Cluster mode. Every node runs an indexer on the shared database; they
// need no lease: FOR UPDATE SKIP LOCKED gives concurrent rounds disjoint
// rows, and a row that another round indexed and committed meanwhile no
// longer matches tsv IS NULL when it is locked (READ COMMITTED re-checks
// the condition on the newest version), so it is not indexed again.
//
// Waking. An idle indexer sends PostgreSQL nothing: a round runs when
// something may be unindexed, never on a short poll (indexwake.go).
//
//   - This node's commits of messages wake its indexer at once (sent, the
//     wake channel, as sqlite's indexer is woken), and so do its commits
//     that change a message row (a reaction, a pin, a thread's reply
//     count, an edit, a deletion, a rename): a round skips the rows such
//     a write holds locked (SKIP LOCKED), and the writer's node wakes its
//     own indexer after the commit, which then takes them.
//   - Another node's indexer wakes it, through LISTEN/NOTIFY, for what
//     that indexer leaves behind: a node announces on notifyChannel when a
//     round of its indexer failed with this node's commits since its last
//     complete round or announcement (the others' rounds, on connections
//     of their own, may succeed; a round that fails again announces
//     nothing more, so that nodes whose rounds all fail do not wake each
//     other in a loop), and when it closes with commits after the start
//     of its last complete round (Store.Close: the writes
//     still queued are committed after the indexer stops). Every node's
//     listener, on a connection of its own, wakes its indexer for another
//     node's announcement of the same schema. Messages that their own
//     node indexes are not announced: the other nodes would only run an
//     empty round each (two statements) for every commit.
//   - A backstop round every indexBackstop (5 s) with no other wake finds
//     what no announcement reached: a NOTIFY lost with a LISTEN
//     connection that dropped (the listener reconnects, and wakes the
//     indexer then, every listenRetry), one that failed, or the messages
//     of a node killed between its commit and its round. The lag goal is
//     a second at p99 (design §5); such a message is indexed within
//     indexBackstop of its commit.
//   - A failed round (the database unreachable, a full disk) is tried
//     again after indexRetry.
//
// Idle, a node thus sends two statements every indexBackstop (a round and
// its count) where it used to send eight a second; the gauge
// parley_search_behind_messages, counted after each of this node's
// rounds, may show other nodes' messages for up to indexBackstop after
// they were indexed elsewhere.
//
// Edits and deletions compute or clear tsv in their own statement, as
// before (edits.go): they lock the row, so a round either indexed the old
// text before (and the edit replaces it) or finds tsv set, or the row
// deleted, after (and skips it). Changes thus reach the index in change
// order and a deleted message's vector is gone when its DELETE returns;
// the searches also skip tombstones.
//
// The lag is parley_search_lag_seconds (send time to the commit of the
// round that indexed the message) and parley_search_behind_messages (the
// messages in messages_unindexed, counted after each round and capped at
// behindCap). WaitIndexed waits for zero.

// DefaultSearchBatch is the default Config.SearchBatch: the messages of
// one round's statement.
const DefaultSearchBatch = 2048

// Indexer bounds.
const (
	// indexBackstop is how long an idle indexer waits, with no wake, before
	// a round of its own: the bound on the lag of a message whose
	// announcement was lost (the LISTEN connection dropped).
	indexBackstop = 5 * time.Second
	// indexRetry is the wait after a failed round before the next.
	indexRetry = 250 * time.Millisecond
	behindCap  = 1_000_000 // the gauge's count stops there
)

// indexer is the Store's search indexer; Store.idx.
type indexer struct {
	s    *Store
	wake chan struct{} // buffered 1: messages were committed, here or on another node
	ctx  context.Context
	stop context.CancelFunc // ends ctx: close
	wg   sync.WaitGroup     // run and listen
	// listening is closed once the listener's first LISTEN is done (or
	// failed): the first round comes after it, so that what another node
	// hands over between the two is not missed.
	listening chan struct{}
	tune      indexTuning
	node      string // this node's mark in its announcements: its own are not heard
	listenCC  *pgx.ConnConfig
	log       *slog.Logger

	// mu guards round, which is closed and replaced after each round.
	mu    sync.Mutex
	round chan struct{}

	batch  int          // messages a round indexes at most (Config.SearchBatch)
	behind atomic.Int64 // the last count of messages_unindexed
	// touched counts this node's commits that wrote a message row (sent);
	// indexed is its value read before the last round that succeeded and
	// left no batch behind: every row those commits wrote is indexed, or
	// was skipped locked by a write whose commit woke an indexer again.
	// announced is its value at the last announcement of a failed round.
	// run owns indexed and announced; handOver reads indexed after run
	// ended.
	touched   atomic.Uint64
	indexed   uint64
	announced uint64
	lag       prometheus.Histogram
	gauge     prometheus.GaugeFunc
	// rounds counts the indexer's statements, which are not in
	// parley_store_queries_total (Store.Queries): they run on their own
	// schedule, as the liveness probe's do.
	rounds *prometheus.CounterVec

	index, count string
}

// indexTuning is what tests change of an indexer; the zero value is the
// product's.
type indexTuning struct {
	backstop    time.Duration     // default indexBackstop
	beforeRound func() error      // called before each round's statement; an error fails the round
	afterRound  func(n int)       // called after each round with the messages it indexed (-1: failed)
	quiet       bool              // announce nothing to the other nodes
	heard       func(node string) // called for each announcement of the schema the listener hears, with its node's mark
	listened    func(pid uint32)  // called when the listener LISTENs, with its backend's pid
}

// newIndexer returns the indexer of s (not started): its listener
// connects with cc.
func newIndexer(s *Store, batch int, cc *pgx.ConnConfig, log *slog.Logger, tune indexTuning) *indexer {
	if tune.backstop <= 0 {
		tune.backstop = indexBackstop
	}
	x := &indexer{
		s:         s,
		batch:     batch,
		wake:      make(chan struct{}, 1),
		listening: make(chan struct{}),
		round:     make(chan struct{}),
		tune:      tune,
		node:      parley.NewID(),
		listenCC:  cc,
		log:       log,
		lag: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "parley_search_lag_seconds",
			Help:    "Time from a message's send to the commit of the search index round that made it findable.",
			Buckets: prometheus.ExponentialBuckets(0.001, 2, 14), // 1ms to 8s
		}),
		rounds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_search_index_queries_total",
			Help: "Statements of the search indexer, by kind: index (a round), behind (a count of what is left), notify (an announcement to the other nodes of messages this node leaves unindexed).",
		}, []string{"kind"}),
		index: `WITH todo AS (
				SELECT room_id, seq FROM messages WHERE tsv IS NULL AND deleted_at IS NULL
				ORDER BY sent_at LIMIT $1 FOR UPDATE SKIP LOCKED)
			UPDATE messages m SET tsv = ` + tsvOf(true)("m.body") + `
			FROM todo WHERE m.room_id = todo.room_id AND m.seq = todo.seq
			RETURNING m.sent_at`,
		count: `SELECT count(*) FROM (SELECT 1 FROM messages
			WHERE tsv IS NULL AND deleted_at IS NULL LIMIT ` + fmt.Sprint(behindCap) + `) AS x`,
	}
	x.gauge = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "parley_search_behind_messages",
		Help: "Messages stored and not yet in the search index (counted after each round of this node's indexer).",
	}, func() float64 { return float64(x.behind.Load()) })
	x.ctx, x.stop = context.WithCancel(context.Background())
	return x
}

// start starts the indexer's goroutines, which close stops.
func (x *indexer) start() {
	x.wg.Add(2)
	go x.listen()
	go x.run()
}

// close stops the indexer: its round in progress ends first. Messages
// committed later are left to handOver.
func (x *indexer) close() {
	x.stop()
	x.wg.Wait()
}

// handOver announces, after close and once the writers are closed, that
// this node may leave messages unindexed: it committed writes of message
// rows after the start of its last complete round. Store.Close calls it
// before closing the pool.
func (x *indexer) handOver() {
	if x.touched.Load() != x.indexed {
		x.notify()
	}
}

// collectors are the indexer's metrics.
func (x *indexer) collectors() []prometheus.Collector {
	return []prometheus.Collector{x.lag, x.gauge, x.rounds}
}

// kick wakes the indexer.
func (x *indexer) kick() {
	select {
	case x.wake <- struct{}{}:
	default:
	}
}

// sent wakes the indexer when a committed batch's events hold a new
// message or a change of one (which may have held an unindexed row
// locked while a round passed it). The writer calls it after the commit;
// it never blocks.
func (x *indexer) sent(events []parley.Event) {
	for _, e := range events {
		if e.Kind == parley.EventMessage || e.Kind.ChangesMessage() {
			x.touched.Add(1)
			x.kick()
			return
		}
	}
}

// roundDone returns a channel closed at the end of the next round.
func (x *indexer) roundDone() <-chan struct{} {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.round
}

func (x *indexer) finished() {
	x.mu.Lock()
	close(x.round)
	x.round = make(chan struct{})
	x.mu.Unlock()
}

// run is the indexer's goroutine: rounds while they find messages, then
// one when woken (sent, the listener, WaitIndexed) or after
// tune.backstop with no wake, until stop. A failed round is announced to
// the other nodes and tried again after indexRetry.
func (x *indexer) run() {
	defer x.wg.Done()
	select {
	case <-x.listening:
	case <-x.ctx.Done():
		return
	}
	t := time.NewTimer(x.tune.backstop)
	defer t.Stop()
	for {
		touched := x.touched.Load() // committed, so in the round's snapshot
		var err error
		if x.tune.beforeRound != nil {
			err = x.tune.beforeRound()
		}
		if x.ctx.Err() != nil {
			return // closing: handOver announces what is left
		}
		var n int
		if err == nil {
			n, err = x.indexRound()
		}
		if err == nil {
			x.countBehind()
			if n < x.batch {
				x.indexed = touched
			}
		} else if touched != max(x.indexed, x.announced) {
			x.announced = touched
			x.notify()
		}
		x.finished()
		if x.tune.afterRound != nil {
			if err != nil {
				n = -1
			}
			x.tune.afterRound(n)
		}
		if err == nil && n == x.batch {
			select {
			case <-x.ctx.Done():
				return
			default:
				continue // a backlog: on at once
			}
		}
		wait := x.tune.backstop
		if err != nil {
			wait = indexRetry
		}
		t.Reset(wait)
		select {
		case <-x.wake:
		case <-t.C:
		case <-x.ctx.Done():
			return
		}
	}
}

// indexRound indexes up to x.batch messages in one statement
// and returns how many.
func (x *indexer) indexRound() (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), x.s.writeTimeout)
	defer cancel()
	x.rounds.WithLabelValues("index").Inc()
	rows, err := x.s.pool.Query(ctx, x.index, x.batch)
	if err != nil {
		return 0, err
	}
	sent, err := pgx.CollectRows(rows, pgx.RowTo[time.Time])
	if err != nil {
		return 0, err
	}
	now := time.Now()
	for _, at := range sent {
		x.lag.Observe(max(0, now.Sub(at).Seconds()))
	}
	return len(sent), nil
}

// countBehind sets the gauge to the messages not indexed yet.
func (x *indexer) countBehind() {
	ctx, cancel := context.WithTimeout(context.Background(), x.s.writeTimeout)
	defer cancel()
	if n, err := x.countNow(ctx); err == nil {
		x.behind.Store(n)
	}
}

// countNow counts the messages not indexed yet.
func (x *indexer) countNow(ctx context.Context) (int64, error) {
	x.rounds.WithLabelValues("behind").Inc()
	var n int64
	err := x.s.pool.QueryRow(ctx, x.count).Scan(&n)
	return n, err
}

// WaitIndexed waits until every message committed before it was called,
// on any node, is in the search index, or ctx ends. With
// Config.NoSearchIndex it returns at once. Tests use it where a search
// must see what was just sent.
func (s *Store) WaitIndexed(ctx context.Context) error {
	if s.idx == nil {
		return nil
	}
	for {
		done := s.idx.roundDone()
		n, err := s.idx.countNow(ctx)
		if err != nil {
			return s.readErr("wait for the search index", err)
		}
		if n == 0 {
			return nil
		}
		s.idx.kick()
		select {
		case <-done:
		case <-ctx.Done():
			return fmt.Errorf("postgres: wait for the search index (%d messages behind): %w", n, ctx.Err())
		}
	}
}
