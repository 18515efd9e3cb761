package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Checkpoints copy the WAL back into the database file; in WAL mode they
// are the only writes to it, and under sync full or normal they end with an
// fsync of it. SQLite would run them inside the writer's commits (every
// 1,000 WAL pages), stalling every write for the copy and the fsync; here a
// checkpointer goroutine with its own connection runs them every
// checkpointEvery while there are writes: a PASSIVE checkpoint copies what
// it can alongside the writer, then, once the WAL holds walRestartAt pages,
// a RESTART checkpoint holds the writer back (Store.txMu, taken between two
// batches: SQLite's busy wait alone would starve against a writer that is
// never idle) just long enough to copy the rest and let the next commit
// start the WAL from its beginning again (giving up after checkpointBusy
// when readers hold it up; a later round tries again). A round whose
// PASSIVE checkpoint could not copy every frame, because a reader holds an
// older snapshot (a long query, `parley backup`'s VACUUM INTO), takes
// neither a RESTART nor a TRUNCATE: either would hold the writer for as
// long as that reader reads; the next round looks again. The writer keeps
// SQLite's automatic checkpoint as a last resort, at writerAutoCheckpoint
// pages.
//
// A commit that erased text (a deletion, an edit: the writer's pages hold
// no deleted bytes, conn.go, but the WAL's older frames still hold the
// pages as they were) asks for a TRUNCATE checkpoint instead: a RESTART
// that then cuts the WAL to nothing, taken under Store.txMu like a RESTART.
// One runs at most every eraseEvery, at the first round after it is asked
// for, so the erased text leaves the WAL within EraseBound of its commit
// and the writer is held back at most once a second: as a RESTART holds
// it (eraseBusy at worst while readers finish), plus the ftruncate of
// the WAL, which costs more than the copy on a busy disk (docs/operations.md
// has the measurements); when readers hold the WAL past eraseBusy, it
// tries again eraseEvery later. The first round
// after Open erases too: a crash may have left erased text in the WAL.
//
// checkpointBusy, a RESTART's wait, is short: only the readers that began
// before the copy ended hold it up (those that begin after it read the
// database file alone), and a query ends in milliseconds, but a read that
// does not (a backup's snapshot, begun between the round's PASSIVE and its
// RESTART: back-to-back backups make that likely) holds the writer back
// for all of the wait; at 200 ms that was a send's p99 of 246 ms
// (docs/perf-log.md, "Backups: the deletions' cost"). A RESTART that gives
// up is tried again the next round. A TRUNCATE waits eraseBusy: it erases
// text within EraseBound, which slow queries in flight at each attempt
// must not put off.
const (
	checkpointBusy       = 20 * time.Millisecond
	eraseBusy            = 200 * time.Millisecond
	writerAutoCheckpoint = 65536 // pages
)

// EraseBound is how long after its commit the text of a deleted message,
// or the old text of an edited one, may stay in the database's files: its
// own pages are overwritten by the commit itself, and the WAL's older
// frames are gone by the next TRUNCATE checkpoint (eraseEvery plus a round
// and its busy wait, with room to spare), unless a reader holds the WAL
// longer than that (readers run single queries).
const EraseBound = 2 * time.Second

// The WAL file's size. A reader that holds an old snapshot for long (a
// backup's copy: 11 s at 8 MB/s for the benchmark's 80 MB) keeps the WAL
// from restarting, so it grows (to 128 MB at 400 sends a second). At the
// first commit after the WAL restarts, SQLite cuts the file back to the
// writer's journal_size_limit, and freeing that many blocks costs the
// filesystem time in which every fdatasync on it waits, the WAL's included:
// on ext4 mounted with online discard, as this project's machines are,
// about 0.35 ms a MB (a 64 MB cut, a 23 ms stall of the sends;
// docs/operations.md, "Backups"). So the checkpointer moves the limit in
// steps (shrink): each round it raises it at once to walShrinkStep below
// the file's size, so that a restart cuts at most a step and what the WAL
// grew by since the round looked (while that round's PASSIVE copied the
// backlog a backup left: a fraction of a step), and lowers it
// towards walKeep at most a step every walShrinkEvery, so that the cuts
// come one at a time with the sends' time between them. A TRUNCATE
// checkpoint (erased text) still cuts the whole file at once.

// Variables for the tests.
var (
	checkpointEvery       = 100 * time.Millisecond
	walRestartAt          = 4096 // pages: 16 MiB at 4 KiB
	eraseEvery            = time.Second
	walKeep         int64 = 64 << 20 // bytes: the WAL file's size limit at rest
	walShrinkStep   int64 = 16 << 20 // bytes: the most a restart cuts
	walShrinkEvery        = time.Second
)

// checkpointer is the checkpoint goroutine's state.
type checkpointer struct {
	db      *sql.DB // one connection of its own
	passive *query
	restart *query
	dirty   chan struct{} // a commit happened since the last checkpoint (cap 1)
	stop    chan struct{}
	done    chan struct{}
	errs    func(error) // reports a failed checkpoint
	txMu    *sync.Mutex // the writer's: held by RESTART and TRUNCATE
	// took observes each checkpoint's time by kind (passive, restart,
	// truncate): parley_store_checkpoint_seconds.
	took *prometheus.HistogramVec

	// erase is set by a write that erased text, in its batch (under
	// txMu), and cleared by the TRUNCATE checkpoint that erases it from
	// the WAL, under txMu too: so a TRUNCATE that clears it comes after
	// the commit that set it.
	erase     atomic.Bool
	lastErase time.Time // the last TRUNCATE checkpoint; owned by run

	// The WAL's size limit (shrink): wal is the WAL file's path, limit the
	// writer's journal_size_limit, lowered last at lastShrink (both owned
	// by run), and setLimit sets it on the writer's connection (under
	// txMu, when that connection is idle).
	wal        string
	limit      int64
	lastShrink time.Time
	setLimit   func(ctx context.Context, n int64) error
	walSeen    atomic.Int64 // the WAL's size at shrink's last look, after it (tests)

	maxLog     atomic.Int64  // the longest WAL a checkpoint found, in pages
	restarts   atomic.Uint64 // RESTART checkpoints run
	erases     atomic.Uint64 // TRUNCATE checkpoints that emptied the WAL
	erasesHeld atomic.Uint64 // TRUNCATE checkpoints that readers held up
	deferred   atomic.Uint64 // rounds that put off a RESTART or TRUNCATE for a reader's snapshot
}

// erased tells the checkpointer that the running batch erases text: a
// TRUNCATE checkpoint is due within EraseBound of its commit. The writer
// calls it (under txMu).
func (c *checkpointer) erased() { c.erase.Store(true) }

// wrote tells the checkpointer that the WAL grew. It never blocks.
func (c *checkpointer) wrote() {
	select {
	case c.dirty <- struct{}{}:
	default:
	}
}

// run checkpoints every checkpointEvery after a write, until stop. Its
// first round erases: a crash may have left erased text in the WAL, which
// SQLite recovered at Open.
func (c *checkpointer) run() {
	defer close(c.done)
	c.erased()
	c.wrote()
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			if c.erase.Load() { // the writer is closed: nothing waits
				c.lastErase = time.Time{}
				if err := c.checkpoint(); err != nil && c.errs != nil {
					c.errs(err)
				}
			}
			return
		case <-t.C:
		}
		select {
		case <-c.dirty:
		default:
			continue // no writes since the last round
		}
		if err := c.checkpoint(); err != nil && c.errs != nil {
			c.errs(err)
		}
	}
}

// checkpoint runs one PASSIVE checkpoint, then, when that copied every
// frame (no reader holds an older snapshot), a TRUNCATE one when text was
// erased and eraseEvery has passed since the last, else a RESTART one when
// the WAL is long enough.
func (c *checkpointer) checkpoint() error {
	ctx := context.Background()
	if err := c.shrink(ctx); err != nil && c.errs != nil {
		c.errs(err) // the round goes on: the limit is an optimisation
	}
	var busy, log, done int
	c.passive.count()
	start := time.Now()
	err := c.passive.stmt.QueryRowContext(ctx).Scan(&busy, &log, &done)
	c.observe("passive", start)
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if int64(log) > c.maxLog.Load() {
		c.maxLog.Store(int64(log))
	}
	if done < log {
		// A reader's snapshot (a long query, a backup's VACUUM INTO)
		// keeps frames from being copied: a RESTART or TRUNCATE would hold
		// the writer back (txMu) while it waits for that reader, so wait
		// for it without the writer's lock, a round at a time.
		if c.erase.Load() || log >= walRestartAt {
			c.deferred.Add(1)
			c.wrote()
		}
		return nil
	}
	if c.erase.Load() {
		if time.Since(c.lastErase) >= eraseEvery {
			return c.truncate(ctx)
		}
		c.wrote() // come back next round
	}
	if log < walRestartAt {
		return nil
	}
	c.restarts.Add(1)
	c.restart.count()
	c.txMu.Lock()
	defer c.txMu.Unlock()
	defer c.observe("restart", time.Now())
	if err := c.restart.stmt.QueryRowContext(ctx).Scan(&busy, &log, &done); err != nil {
		return fmt.Errorf("checkpoint (restart): %w", err)
	}
	return nil
}

// truncate runs a TRUNCATE checkpoint for the erased text: every frame
// copied into the database file and the WAL cut to nothing. When readers
// keep it from finishing, the erase stays due for the next round.
func (c *checkpointer) truncate(ctx context.Context) error {
	var busy, log, done int
	c.restart.count() // kind "checkpoint"; run at most once a second, so not prepared
	// The longer wait is set before the writer is held back, and put back
	// after it is let go (the defers run in reverse).
	if err := c.busyTimeout(ctx, eraseBusy); err != nil {
		c.erase.Store(true)
		c.wrote()
		return err
	}
	defer func() {
		if err := c.busyTimeout(ctx, checkpointBusy); err != nil && c.errs != nil {
			c.errs(err)
		}
	}()
	c.txMu.Lock()
	defer c.txMu.Unlock()
	defer c.observe("truncate", time.Now())
	c.erase.Store(false) // every commit that set it is over
	c.lastErase = time.Now()
	err := c.db.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &log, &done)
	if err != nil || busy != 0 {
		c.erase.Store(true)
		c.wrote()
	}
	if err != nil {
		return fmt.Errorf("checkpoint (truncate): %w", err)
	}
	if busy != 0 {
		c.erasesHeld.Add(1)
	} else {
		c.erases.Add(1)
	}
	return nil
}

// busyTimeout sets how long the checkpointer's connection waits for
// readers: checkpointBusy, or eraseBusy for a TRUNCATE.
func (c *checkpointer) busyTimeout(ctx context.Context, d time.Duration) error {
	_, err := c.db.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d", d/time.Millisecond))
	if err != nil {
		return fmt.Errorf("checkpoint: busy timeout: %w", err)
	}
	return nil
}

// shrink moves the writer's journal_size_limit with the WAL file's size:
// up at once to walShrinkStep below it, down towards walKeep at most a step
// every walShrinkEvery, so that a restart of the WAL cuts the file by a step
// at most. It takes txMu only when the limit changes: after a long reader,
// not in a steady state.
func (c *checkpointer) shrink(ctx context.Context) error {
	fi, err := os.Stat(c.wal)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil // no WAL yet, or cut to nothing and not written since
		}
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer c.walSeen.Store(fi.Size())
	target := max(walKeep, fi.Size()-walShrinkStep)
	switch {
	case target == c.limit:
		return nil
	case target < c.limit:
		if time.Since(c.lastShrink) < walShrinkEvery {
			return nil
		}
		target = max(target, c.limit-walShrinkStep)
		c.lastShrink = time.Now()
	}
	c.txMu.Lock()
	defer c.txMu.Unlock()
	if err := c.setLimit(ctx, target); err != nil {
		return fmt.Errorf("checkpoint: WAL size limit: %w", err)
	}
	c.limit = target
	return nil
}

// observe records a checkpoint of kind that began at start.
func (c *checkpointer) observe(kind string, start time.Time) {
	c.took.WithLabelValues(kind).Observe(time.Since(start).Seconds())
}

// checkpointerConfig is the connection config of the checkpointer: it waits
// for locks briefly, to hold the writer back as little as it can.
func checkpointerConfig(cfg Config) Config {
	cfg.BusyTimeout = checkpointBusy
	return cfg
}
