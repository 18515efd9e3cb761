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
	// SearchBatch is how many messages the search indexer indexes in one
	// transaction of the writer (indexer.go). Default 2048.
	SearchBatch int
	// NoSearchIndex runs no search indexer (indexer.go): only for
	// measuring what the index costs (BENCHMARKS.md), on a database that is
	// thrown away after; search misses the messages sent meanwhile.
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
	if c.SearchBatch <= 0 {
		c.SearchBatch = DefaultSearchBatch
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
	noIndex  bool     // Config.NoSearchIndex
	idx      *indexer // the search indexer; nil with NoSearchIndex

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
	if !cfg.NoSearchIndex {
		s.idx = newIndexer(s, cfg.SearchBatch)
	}
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
	if s.idx != nil {
		go s.idx.run()
	}
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
		took:    s.m.ckTime,
		wal:     cfg.Path + "-wal",
		limit:   walKeep,
		setLimit: func(ctx context.Context, n int64) error {
			_, err := s.wdb.ExecContext(ctx, journalSizeLimit(n))
			return err
		},
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
	if s.idx != nil {
		if err := s.idx.scan(ctx, s.rdb); err != nil {
			return err
		}
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
// database. Later calls fail with CodeUnavailable.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		if s.idx != nil {
			close(s.idx.stop) // its round in progress ends first
			<-s.idx.done
		}
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
