// Package postgres is the parley.Store on PostgreSQL: the shared store of a
// cluster, where several Parley nodes write to one database at once.
//
// # Writes
//
// Every write (CreateUser, CreateToken, CreateRoom, Join, Leave, Send,
// MarkRead) is handed to one of the node's group-commit writers (package
// groupcommit; Config.Writers of them, the writes of one room always to the
// same one). A writer takes everything waiting, up to Config.MaxBatch
// writes, and runs them in one transaction sent as one pipeline: BEGIN, a
// statement that locks the rooms the batch changes, then the writes in
// order, then COMMIT. One round trip and one commit for the whole batch,
// so that a room's lock is held for the statements and the commit's WAL
// flush only, not for a round trip to the node.
//
// Each write is a single statement that reports a logical failure
// (name_taken, room_full, not_found, a repeated client_id) in its result
// row instead of raising an error, so that it fails that write only. A run
// of sends among other writes is one set-based statement: one INSERT of
// all its messages, one UPDATE of each room. A batch of sends only (at
// least 16), the usual batch under load, takes a path of its own
// (sendbatch.go): the rooms locked and read, the members and client ids
// read, then the seqs worked out in Go and written by one multi-row INSERT
// and one UPDATE each of the rooms and the read positions, sent with the
// COMMIT; two round trips, and about half the database's CPU of the
// set-based statement.
// After the commit, Config.OnCommit gets the batch's events, then the
// writes return; the batches of the node's writers reach OnCommit in
// commit order.
//
// # Several nodes
//
// Each node has its own writers, each with its own transactions;
// PostgreSQL keeps them all apart:
//
//   - The batch first locks, with SELECT ... ORDER BY id FOR NO KEY
//     UPDATE, the row of every existing room it changes (a message, a join,
//     a leave, a read position), in id order. Two batches that share rooms
//     lock them in the same order, so they queue instead of deadlocking,
//     and while a batch holds a room no other node changes its seq, its
//     members or its messages. Under READ COMMITTED each later statement
//     reads what was committed before it, so a check of the batch (is the
//     room full, is the user a member, was this client_id used) and the
//     write after it cannot be separated by another node's commit.
//   - A message's seq is assigned by "UPDATE rooms SET last_seq =
//     last_seq + 1 ... RETURNING" in the same statement as its INSERT (a
//     run of sends: last_seq + row_number() over the room's sends, and
//     one UPDATE of last_seq to the highest), under the room's lock; a
//     join adds the member only by "UPDATE rooms SET member_count =
//     member_count + 1 WHERE ... (capacity = 0 OR member_count <
//     capacity)", and a CHECK constraint backs it.
//   - A repeated client_id is found by the unique index (room_id,
//     sender_id, client_id), also when another node wrote the original.
//   - What no room lock covers (a user name, a token, the direct room of a
//     pair) is decided by a unique index: INSERT ... ON CONFLICT DO NOTHING
//     where the outcome is a logical failure, or, when another node wins a
//     race, a unique violation (SQLSTATE 23505) that makes the batch run
//     again and find the other node's row. A deadlock (40P01) or
//     serialization failure (40001) also runs the batch again, after a
//     short random pause. Errors are told apart by SQLSTATE, never by text.
//
// # Reads
//
// Reads run on the connection pool (Config.MaxConns) and see every
// committed write of every node.
//
// Statements are prepared and cached per connection (pgx's default), so a
// pooler between the store and PostgreSQL must keep sessions (PgBouncer's
// session mode, not its transaction mode).
//
// # Schema
//
// The schema is in migrations/*.sql, embedded and applied at Open in
// version order, each version once, recorded in schema_migrations. Open
// holds a session advisory lock while it migrates, so that nodes starting
// together apply each migration once. The store lives in the first schema
// of the connection's search_path (set it with search_path=... in the URL).
// Times are timestamptz, at the microsecond precision of parley.Now, and
// are returned in UTC.
//
// # Metrics
//
// parley_store_queries_total{kind} counts every statement sent to
// PostgreSQL (Store.Queries is its sum), parley_store_batch_size the writes
// per transaction, parley_store_commit_seconds the time of each batch and
// parley_store_batch_retries_total the batches run again.
// parley_store_full_total counts the writes refused for a full disk and
// parley_store_full is 1 while they are (as in package sqlite).
//
// # Outages and a full disk
//
// While PostgreSQL cannot be reached, writes and reads fail with
// CodeUnavailable; the outage is logged once when it starts and once when a
// call reaches the store again (outage.go). A write that fails with
// disk_full (SQLSTATE 53100) was rolled back: it fails with CodeUnavailable,
// "the server's storage is full", to be sent again with the same client-id,
// logged once when it starts and once at the first write committed 5 s
// after the last refusal, and shown by Store.StorageFull.
package postgres

import (
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
	// NoSearchIndex stores new messages without their search vector: only
	// for measuring what the index costs (docs/perf-log.md); search misses
	// those messages.
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

	closed    atomic.Bool
	closeOnce sync.Once
	out       outage
	full      *storagefull.State // writes refused for a full disk (outage.go)
}

var _ parley.Store = (*Store)(nil)

// Open connects to the database at cfg.URL, applies the pending migrations
// and starts the writer.
func Open(ctx context.Context, cfg Config) (*Store, error) {
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
	s := &Store{m: m, seq: newSequencer(), onCommit: cfg.OnCommit, wq: newWriteQueries(m, !cfg.NoSearchIndex), rq: newReadQueries(m),
		writeTimeout: cfg.WriteTimeout, minSendBatch: minSendBatch, out: outage{log: cfg.Logger}, full: storagefull.New("postgres", cfg.Logger, " (SQLSTATE 53100)")}
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
		if err := s.m.register(cfg.Registerer, s.full.Collectors()...); err != nil {
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
		for _, w := range s.w {
			w.Close()
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
// far (the sum of parley_store_queries_total).
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
