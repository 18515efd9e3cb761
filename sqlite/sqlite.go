// Package sqlite is the embedded parley.Store: one SQLite database file in
// WAL mode, the default store of a single Parley node.
//
// # Writes
//
// Every write (CreateUser, CreateToken, CreateRoom, Join, Leave, Send,
// MarkRead) is handed to one writer goroutine (package groupcommit) that owns
// the only write connection. It takes everything waiting, up to
// Config.MaxBatch writes, and runs them in order in one transaction: one
// commit, one fsync, for the whole batch. Consecutive Sends of a batch run as
// one group of multi-row statements (send.go). That is how a 2-core machine
// stores tens of thousands of messages a second with an fsync per commit.
//
// Each write checks its preconditions before it changes anything, so a
// logical failure (name_taken, room_full, not_found) fails that write only.
// A write that hits an unexpected constraint violation is dropped with an
// internal error and the rest of the batch runs again without it. A failed
// commit fails every write of the batch: nothing is reported as done that is
// not committed. Once the batch is durable, Config.OnCommit gets its events
// in commit order, then the writers return.
//
// A message's seq is assigned by UPDATE rooms SET last_seq = last_seq + n
// ... RETURNING in the same transaction as its INSERT, and a join by an
// UPDATE that adds the member only while member_count < capacity (the table
// also has CHECK constraints), so both stay right even without the single
// writer. A repeated client_id is found by the unique index
// (room_id, sender_id, client_id), which sees the earlier writes of the same
// batch, or within the batch's group of Sends.
//
// # Reads
//
// Reads use a pool of query-only connections (Config.Readers); WAL lets them
// run while the writer commits, and they see every committed write.
//
// # Durability (Config.Sync)
//
//   - full (the default): every commit's WAL pages are fsynced before any
//     write of the batch returns or its events reach OnCommit. A write that
//     returned survives a crash of the process, a crash of the OS and a
//     power loss (on a disk that honours fsync). The fsync (fdatasync on
//     Linux, walsync.go) runs on the group-commit writer right after its
//     commit while the disk syncs fast, else on the flusher while the
//     writer commits the next batch (the connection itself runs
//     synchronous=NORMAL), so a reader may see a
//     commit up to one fsync before it is durable; a power loss in that
//     window loses it, and it was never reported as done.
//   - normal: synchronous=NORMAL. Every commit is written to the WAL (the
//     OS holds it) but fsynced only at checkpoints. A write that returned
//     survives a crash of the process; an OS crash or a power loss may undo
//     the last commits before the latest checkpoint, and leaves the database
//     consistent.
//   - off: synchronous=OFF. SQLite never fsyncs. A write that returned
//     survives a crash of the process only; an OS crash or a power loss may
//     lose commits and may corrupt the database file.
//
// Checkpoints (copying the WAL into the database file, with an fsync under
// full and normal) run on a checkpointer goroutine of their own rather than
// inside the writer's commits (checkpoint.go).
//
// # Schema
//
// The schema is in migrations/*.sql, embedded and applied at Open in version
// order, each version once, recorded in the schema_migrations table. Times are
// stored as integer unix microseconds (parley.Now precision).
//
// # Metrics
//
// parley_store_queries_total{kind} counts every statement sent to SQLite
// (Store.Queries is its sum), parley_store_batch_size the writes per
// transaction, parley_store_commit_seconds the time of each batch in the
// writer, parley_store_fsync_seconds each fsync of the WAL (sync=full),
// parley_store_write_stage_seconds{stage} where each write's time went
// (package groupcommit's Timing) and parley_store_checkpoint_errors_total
// the failed checkpoints. parley_store_full_total counts the writes refused
// because the storage was full and parley_store_full is 1 while they are.
//
// # A full disk
//
// A write that SQLite fails with SQLITE_FULL (no room on the disk for the
// WAL, the database file or a temporary file; or the database at its
// max_page_count) was rolled back whole: its batch fails with CodeUnavailable,
// "the server's storage is full", and the client sends again with the same
// client-id. Reads go on. The state is logged once when it starts and once
// at the first write committed 5 s after the last refusal (full.go); seqs
// resume at the next one, since the failed transactions took none. A failed fsync is
// another matter: the group-commit writer stops at it (package groupcommit),
// since what was written may not be durable, and the node must restart.
//
// # Driver
//
// The cgo driver mattn/go-sqlite3 by default; modernc.org/sqlite (pure Go)
// when built with CGO_ENABLED=0 or -tags parley_modernc. DRIVER.md has the
// measurements behind the choice.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"parley"
	"parley/groupcommit"
	"parley/storagefull"
)

// Config configures Open. Zero fields take the documented defaults.
type Config struct {
	// Path is the database file; its directory is created if missing.
	// Required.
	Path string
	// Sync is the durability setting; default SyncFull.
	Sync Sync
	// OnCommit, when set, receives the events of every committed batch, in
	// commit order, before the writes of the batch return. It runs on the
	// writer goroutine: it must not block nor call the store's writes.
	OnCommit parley.EventSink
	// MaxBatch is the most writes one transaction holds. Default
	// DefaultMaxBatch.
	MaxBatch int
	// Readers is the size of the reader connection pool. Default
	// 4 × GOMAXPROCS, at least 4.
	Readers int
	// BusyTimeout is how long a connection waits for a lock held by another
	// process before it fails. Default 5s.
	BusyTimeout time.Duration
	// CacheKiB is the page cache of each connection. Default 16384 (16 MiB).
	CacheKiB int
	// Registerer, when set, gets the store's metrics.
	Registerer prometheus.Registerer
	// Logger logs when writes start being refused for a full storage and
	// when they succeed again, once each. Default slog.Default().
	Logger *slog.Logger
	// NoSearchIndex leaves new messages out of the full-text index: only
	// for measuring what the index costs (BENCHMARKS.md), on a database
	// that is thrown away after; search misses those messages, and editing
	// or deleting one corrupts the index.
	NoSearchIndex bool
}

// DefaultMaxBatch is the default Config.MaxBatch: 1,024 writes. A batch
// holds what waited during the commit before it, so this bounds only a
// heavy load; there, a commit costs per room it touches (a leaf of
// messages each, and its rooms and members rows) more than per message, and
// 1,024 senders over 100 rooms cost a fifth to a third less CPU per
// message than with batches of 256 (issue 16, docs/perf-log.md "Store").
const DefaultMaxBatch = 1024

// defaults fills in the zero fields of c.
func (c *Config) defaults() {
	if c.MaxBatch <= 0 {
		c.MaxBatch = DefaultMaxBatch
	}
	if c.Readers <= 0 {
		c.Readers = max(4, 4*runtime.GOMAXPROCS(0))
	}
	if c.BusyTimeout <= 0 {
		c.BusyTimeout = 5 * time.Second
	}
	if c.CacheKiB <= 0 {
		c.CacheKiB = 16384
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Store is the SQLite parley.Store. It is safe for concurrent use; Close
// stops it.
type Store struct {
	wdb, rdb *sql.DB // the writer's single connection; the readers' pool
	ck       *checkpointer
	m        *metrics
	full     *storagefull.State // writes refused for a full storage (full.go)
	w        *groupcommit.Writer[writeOp, result]
	onCommit parley.EventSink
	wal      *os.File // the WAL, fsynced by the group-commit Writer under SyncFull
	wq       writeQueries
	rq       readQueries
	noIndex  bool // Config.NoSearchIndex

	// txMu is held by the writer through each batch, and by the
	// checkpointer through a RESTART checkpoint (checkpoint.go).
	txMu sync.Mutex

	// Owned by the writer goroutine (and Open before it starts).
	lastNow int64 // the latest time handed out, unix µs; times only grow
	args    []any // the argument buffer of the grouped statements
	nwq     int   // the number of writer statements

	closed    atomic.Bool
	closeOnce sync.Once
	closeErr  error
}

var _ parley.Store = (*Store)(nil)

// Open opens (creating if needed) the database at cfg.Path, applies the
// pending migrations and starts the writer.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	if cfg.Path == "" {
		return nil, errors.New("sqlite: no database path")
	}
	if cfg.Sync < SyncFull || cfg.Sync > SyncOff {
		return nil, fmt.Errorf("sqlite: invalid sync setting %d", int(cfg.Sync))
	}
	cfg.defaults()
	if dir := filepath.Dir(cfg.Path); dir != "" {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, fmt.Errorf("sqlite: %w", err)
		}
	}

	s := &Store{m: newMetrics(), full: storagefull.New("sqlite", cfg.Logger, ""), onCommit: cfg.OnCommit, noIndex: cfg.NoSearchIndex}
	s.wdb = openDB(cfg.Path, 1, true, cfg)
	if err := s.init(ctx, cfg); err != nil {
		s.closeDBs()
		return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
	}
	gc := groupcommit.Config{MaxBatch: cfg.MaxBatch, OnBatch: s.m.batch.Observe, OnTiming: s.m.batch.ObserveTiming}
	if cfg.Sync == SyncFull {
		// The WAL exists from the migrations on, and lives as long as the
		// connections: SQLite truncates it but never removes it while open.
		f, err := os.OpenFile(cfg.Path+"-wal", os.O_RDWR, 0)
		if err != nil {
			s.closeDBs()
			return nil, fmt.Errorf("sqlite: open %s: %w", cfg.Path, err)
		}
		s.wal = f
		ws := newWALSyncer(f)
		gc.Flush = func() error {
			took, err := ws.sync()
			s.m.fsync.Observe(took.Seconds())
			return err
		}
		gc.FlushInline = ws.fast
	}
	s.w = groupcommit.New(s.commit, gc)
	go s.ck.run()
	return s, nil
}

// walMode puts the database of db in WAL mode, which it keeps. Changing
// the mode does not wait on the busy timeout: when another process does
// the same to a new database at the same moment (parley migrate and serve),
// SQLite answers SQLITE_BUSY at once, so it tries again for up to
// about five seconds; the other process has set WAL by then.
func walMode(ctx context.Context, db *sql.DB) error {
	for attempt := 0; ; attempt++ {
		var mode string
		err := db.QueryRowContext(ctx, "PRAGMA journal_mode = WAL").Scan(&mode)
		if err == nil && mode != "wal" {
			return fmt.Errorf("journal mode is %q, want wal", mode)
		}
		if err == nil {
			return nil
		}
		if !isBusy(err) || attempt == 500 {
			return fmt.Errorf("set WAL mode: %w", err)
		}
		select {
		case <-time.After(10 * time.Millisecond):
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (s *Store) init(ctx context.Context, cfg Config) error {
	if err := walMode(ctx, s.wdb); err != nil {
		return err
	}
	if _, err := migrate(ctx, s.wdb, true); err != nil {
		return err
	}
	s.rdb = openDB(cfg.Path, cfg.Readers, false, cfg)
	s.ck = &checkpointer{
		db:      openDB(cfg.Path, 1, true, checkpointerConfig(cfg)),
		passive: &query{kind: "checkpoint", text: "PRAGMA wal_checkpoint(PASSIVE)"},
		restart: &query{kind: "checkpoint", text: "PRAGMA wal_checkpoint(RESTART)"},
		dirty:   make(chan struct{}, 1),
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		errs:    func(error) { s.m.ckErrors.Inc() },
		txMu:    &s.txMu,
	}
	s.nwq = len(s.wq.all())
	if err := prepareAll(s.wdb, s.m, s.wq.all()); err != nil {
		return err
	}
	for _, q := range s.rq.all() {
		q.read = true
	}
	if err := prepareAll(s.rdb, s.m, s.rq.all()); err != nil {
		return err
	}
	if err := prepareAll(s.ck.db, s.m, []*query{s.ck.passive, s.ck.restart}); err != nil {
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
// database. Later calls fail with CodeUnavailable.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.w.Close()
		close(s.ck.stop)
		<-s.ck.done
		s.closeErr = s.closeDBs()
	})
	return s.closeErr
}

// closeDBs closes the statements, the connections and the WAL handle.
func (s *Store) closeDBs() error {
	closeAll(s.wq.all())
	closeAll(s.rq.all())
	var errs []error
	if s.ck != nil {
		closeAll([]*query{s.ck.passive, s.ck.restart})
		errs = append(errs, s.ck.db.Close())
	}
	if s.rdb != nil {
		errs = append(errs, s.rdb.Close())
	}
	errs = append(errs, s.wdb.Close())
	if s.wal != nil {
		errs = append(errs, s.wal.Close())
	}
	return errors.Join(errs...)
}

// Ping checks that a reader connection answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	s.rq.ping.count()
	if err := s.rq.ping.stmt.QueryRowContext(ctx).Scan(&one); err != nil {
		return s.readErr("ping", err)
	}
	return nil
}

// Queries returns how many statements the store has sent to SQLite so far
// (the sum of parley_store_queries_total).
func (s *Store) Queries() uint64 { return s.m.total.Load() }

// Reads returns how many read queries (user, room, member, history and room
// list lookups) have reached SQLite since Open: what a cache in front of
// the store should bring to zero. Writes and WAL checkpoints, which run on
// their own schedule, are not counted here.
func (s *Store) Reads() uint64 { return s.m.reads.Load() }

// BatchStats returns the group-commit writer's counters: batches, writes,
// time spent committing and syncing, and the writer's yields.
func (s *Store) BatchStats() groupcommit.Stats { return s.w.Stats() }

// Driver names the SQLite driver compiled in.
func Driver() string { return driverName }

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
	return fmt.Errorf("%s: %w", op, err)
}
