package postgres

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"parley"
	"parley/groupcommit"
	"parley/storagefull"
)

// Config configures Open. Zero fields take the documented defaults.
type Config struct {
	// URL is the connection string, postgres://user@host:port/db?...
	// Required. Parameters pgx does not know are session settings, such as
	// search_path.
	URL string
	// OnCommit, when set, receives the events of every committed batch of
	// this node, in commit order, before the writes of the batch return. It
	// runs on the writer goroutine: it must not block nor call the store's
	// writes.
	OnCommit parley.EventSink
	// BeforeChanges, when set, hears the rooms of a batch's changes of
	// stored messages (edits, deletions, reactions, pins, renames, a
	// reply's thread summary), with how many in each, before the batch
	// runs (redis.HotStore.Intend: cluster mode). The store calls the
	// func it returns once the batch's outcome is known: with true after
	// the batch's OnCommit (or, with no events, when OnCommit would have
	// run), with false when nothing of it committed; never when the
	// outcome is unknown (a COMMIT whose answer was lost). Both run on
	// the writer goroutines, so they must be quick and must not call the
	// store.
	BeforeChanges func(rooms map[string]int) (after func(committed bool))
	// MaxBatch is the most writes one transaction holds. Default
	// DefaultMaxBatch.
	MaxBatch int
	// Writers is the number of group-commit writers, each with its own
	// transactions: while one waits for its round trips and its commit,
	// another runs its batch. The writes to one room always go through the
	// same writer, and the events of every writer reach OnCommit in the
	// node's commit order (sequencer). More than one pays when the
	// database is far (network latency) rather than busy: on a machine
	// whose cores PostgreSQL shares, each writer's smaller batches cost
	// more CPU a message than the overlap gains. Default DefaultWriters.
	Writers int
	// MaxConns is the size of the connection pool, the writers'
	// connections included. Default 4 × GOMAXPROCS, at least Writers + 4.
	// The liveness probe and the search indexer's listener (indexer.go)
	// each hold one more connection, outside the pool.
	MaxConns int
	// ConnectTimeout bounds Open's first connection. Default 10s.
	ConnectTimeout time.Duration
	// WriteTimeout bounds each attempt of a batch, from taking a
	// connection to the end of its COMMIT, so that a database that stops
	// answering fails the writes instead of holding them forever. A batch
	// whose COMMIT times out has an unknown outcome, as with any lost
	// connection: its writes fail, and may have been committed. Default
	// 30s.
	WriteTimeout time.Duration
	// LivenessTimeout is the liveness probe's deadline: a ping on a
	// connection of its own every LivenessTimeout/2, and two in a row
	// unanswered within it mark the store down, so that new writes and
	// reads are refused at once as unavailable (the calls in flight keep
	// their wait) until a ping is answered again. A store slow under load
	// is not refused: only the probe decides, never a slow commit.
	// Negative: no probe. Default 1s.
	LivenessTimeout time.Duration
	// Registerer, when set, gets the store's metrics.
	Registerer prometheus.Registerer
	// Logger logs the start and the end of an outage (PostgreSQL
	// unreachable) and of a full disk (writes refused with SQLSTATE
	// 53100), once each. Default slog.Default().
	Logger *slog.Logger
	// SearchBatch is how many messages the search indexer indexes in one
	// statement (indexer.go). Default 2048.
	SearchBatch int
	// NoSearchIndex runs no search indexer (indexer.go: no listener, no
	// announcement of sends either) and edits compute no search vector: only for measuring what the index costs
	// (docs/perf-log.md); search misses the messages sent meanwhile.
	NoSearchIndex bool
}

// DefaultWriters is the default Config.Writers.
const DefaultWriters = 1

// DefaultMaxBatch is the default Config.MaxBatch: 1,024 writes. A batch
// holds what waited during the commit before it, so this bounds only a
// heavy load; there, a batch costs per room it touches more than per
// message, and with 1,024 senders over 100 rooms one writer's batches of
// up to 1,024 (about 550) sent 1.2-2.1× the messages a second of batches
// of 256, for a fifth less of PostgreSQL's CPU a message, and more than
// two writers with batches of 256 (docs/perf-log.md, "PostgreSQL writers").
const DefaultMaxBatch = 1024

// Store is the PostgreSQL parley.Store. It is safe for concurrent use;
// Close stops it.
type Store struct {
	pool *pgxpool.Pool
	m    *metrics
	w    []*groupcommit.Writer[writeOp, result] // by hash of writeOp.shard
	seq  *sequencer
	// fence is held for reading by each attempt of a batch, from before
	// its ticket to its outcome, and for writing by one that holds a
	// crossShard write.
	fence    sync.RWMutex
	onCommit parley.EventSink
	before   func(rooms map[string]int) func(bool) // Config.BeforeChanges
	wq       *writeQueries
	rq       *readQueries

	writeTimeout time.Duration
	live         *liveness // the liveness probe (liveness.go), or nil
	minSendBatch int       // the smallest batch of sends that takes trySends
	// afterCommit, when set (tests), is called by the writer with a
	// committed batch's events, before they go to the sequencer.
	afterCommit func([]parley.Event)
	// fenceWait, when set (tests), is called by a writer whose batch holds
	// a crossShard write and must wait for other batches in flight.
	fenceWait func()
	lastNow   atomic.Int64 // the latest write time handed out, unix µs

	idx *indexer // the search indexer; nil with NoSearchIndex

	closed    atomic.Bool
	closeOnce sync.Once
	out       outage
	full      *storagefull.State // writes refused for a full disk (outage.go)
}

var _ parley.Store = (*Store)(nil)

// Open connects to the database at cfg.URL, applies the pending migrations
// and starts the writer.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	return open(ctx, cfg, indexTuning{})
}

// open is Open with the search indexer tuned (tests).
func open(ctx context.Context, cfg Config, tune indexTuning) (*Store, error) {
	if cfg.URL == "" {
		return nil, errors.New("postgres: no database URL")
	}
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.Writers <= 0 {
		cfg.Writers = DefaultWriters
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = max(cfg.Writers+4, 4*runtime.GOMAXPROCS(0))
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 10 * time.Second
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 30 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.LivenessTimeout == 0 {
		cfg.LivenessTimeout = time.Second
	}
	pc, err := pgxpool.ParseConfig(cfg.URL)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	pc.MaxConns = int32(cfg.MaxConns)
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = cfg.ConnectTimeout
	}

	m := newMetrics()
	s := &Store{m: m, seq: newSequencer(), onCommit: cfg.OnCommit, before: cfg.BeforeChanges, wq: newWriteQueries(m, !cfg.NoSearchIndex), rq: newReadQueries(m),
		writeTimeout: cfg.WriteTimeout, minSendBatch: minSendBatch, out: outage{log: cfg.Logger}, full: storagefull.New("postgres", cfg.Logger, " (SQLSTATE 53100)")}
	if !cfg.NoSearchIndex {
		s.idx = newIndexer(s, cmp.Or(max(cfg.SearchBatch, 0), DefaultSearchBatch), pc.ConnConfig, cfg.Logger, tune)
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	if err := s.init(ctx, cfg); err != nil {
		s.pool.Close()
		return nil, fmt.Errorf("postgres: open %s@%s/%s: %w", pc.ConnConfig.User, pc.ConnConfig.Host,
			pc.ConnConfig.Database, err)
	}
	for range cfg.Writers {
		s.w = append(s.w, groupcommit.New(s.commit, groupcommit.Config{MaxBatch: cfg.MaxBatch, OnBatch: m.batch.Observe, OnTiming: m.batch.ObserveTiming}))
	}
	if cfg.LivenessTimeout > 0 {
		s.startLiveness(newLiveness(pc.ConnConfig, cfg.LivenessTimeout))
	}
	if s.idx != nil {
		s.idx.start()
	}
	return s, nil
}

// startLiveness starts the store's liveness probe l (liveness.go), which
// Close stops: its verdicts go to the outage's log.
func (s *Store) startLiveness(l *liveness) {
	s.live = l
	go l.run(func(err error) { s.out.failed(fmt.Errorf("%w: %w", errNoAnswer, err), true) }, s.out.ok)
}

func (s *Store) init(ctx context.Context, cfg Config) error {
	if err := s.pool.Ping(ctx); err != nil {
		return err
	}
	if _, err := migrate(ctx, s.pool, true); err != nil {
		return err
	}
	if cfg.Registerer != nil {
		more := s.full.Collectors()
		if s.idx != nil {
			more = append(more, s.idx.collectors()...)
		}
		if err := s.m.register(cfg.Registerer, more...); err != nil {
			return err
		}
	}
	return nil
}

// Close waits for the pending writes, stops the writer and closes the
// pool. Later calls fail with CodeUnavailable.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.idx != nil {
			s.idx.close() // its round in progress ends first
		}
		for _, w := range s.w {
			w.Close()
		}
		if s.idx != nil {
			s.idx.handOver() // what the writers committed after it stopped
		}
		if s.live != nil {
			s.live.close()
		}
		s.pool.Close()
	})
	return nil
}

// Ping checks that the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.queryRow(ctx, s.rq.ping).Scan(&one); err != nil {
		return s.readErr("ping", err)
	}
	s.out.ok()
	return nil
}

// Queries returns how many statements the store has sent to PostgreSQL so
// far (the sum of parley_store_queries_total); the search indexer's, on
// their own schedule, are parley_search_index_queries_total.
func (s *Store) Queries() uint64 { return s.m.total.Load() }

// BatchStats returns the group-commit writers' counters, summed: batches,
// writes, time spent committing and the writers' yields.
func (s *Store) BatchStats() groupcommit.Stats {
	var sum groupcommit.Stats
	for _, w := range s.w {
		st := w.Stats()
		sum.Batches += st.Batches
		sum.Requests += st.Requests
		sum.Failed += st.Failed
		sum.CommitTime += st.CommitTime
		sum.Yields += st.Yields
	}
	return sum
}

// errClosed is what a call on a closed store gets.
var errClosed = parley.Errorf(parley.CodeUnavailable, "store closed")

// readErr translates a reader's error.
func (s *Store) readErr(op string, err error) error {
	var pe *parley.Error
	if errors.As(err, &pe) {
		return err
	}
	if s.closed.Load() {
		return errClosed
	}
	if unreachable(err) {
		return s.out.failed(err, false)
	}
	if diskFull(err) {
		return fmt.Errorf("%s: %w: %w", op, errReadFull, err)
	}
	if strings.HasPrefix(pgCode(err), "22") {
		// Data exceptions: an argument PostgreSQL cannot take as text (a
		// NUL byte, invalid UTF-8) names nothing that exists.
		return parley.Errorf(parley.CodeNotFound, "no such %s", op)
	}
	return fmt.Errorf("%s: %w", op, err)
}
