package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
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
// when readers hold it up; a later round tries again). The writer keeps
// SQLite's automatic checkpoint as a last resort, at writerAutoCheckpoint
// pages.
const (
	checkpointBusy       = 200 * time.Millisecond
	writerAutoCheckpoint = 65536 // pages
)

// Variables for the tests.
var (
	checkpointEvery = 100 * time.Millisecond
	walRestartAt    = 4096 // pages: 16 MiB at 4 KiB
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
	txMu    *sync.Mutex // the writer's: held by RESTART

	maxLog   atomic.Int64  // the longest WAL a checkpoint found, in pages
	restarts atomic.Uint64 // RESTART checkpoints run
}

// wrote tells the checkpointer that the WAL grew. It never blocks.
func (c *checkpointer) wrote() {
	select {
	case c.dirty <- struct{}{}:
	default:
	}
}

// run checkpoints every checkpointEvery after a write, until stop.
func (c *checkpointer) run() {
	defer close(c.done)
	t := time.NewTicker(checkpointEvery)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
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

// checkpoint runs one PASSIVE checkpoint, then a RESTART one when the WAL
// is long enough.
func (c *checkpointer) checkpoint() error {
	ctx := context.Background()
	var busy, log, done int
	c.passive.count()
	if err := c.passive.stmt.QueryRowContext(ctx).Scan(&busy, &log, &done); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	if int64(log) > c.maxLog.Load() {
		c.maxLog.Store(int64(log))
	}
	if log < walRestartAt {
		return nil
	}
	c.restarts.Add(1)
	c.restart.count()
	c.txMu.Lock()
	defer c.txMu.Unlock()
	if err := c.restart.stmt.QueryRowContext(ctx).Scan(&busy, &log, &done); err != nil {
		return fmt.Errorf("checkpoint (restart): %w", err)
	}
	return nil
}

// checkpointerConfig is the connection config of the checkpointer: it waits
// for locks briefly, to hold the writer back as little as it can.
func checkpointerConfig(cfg Config) Config {
	cfg.BusyTimeout = checkpointBusy
	return cfg
}
