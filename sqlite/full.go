package sqlite

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"parley"
	"parley/groupcommit"
)

// errFull is what a write gets while the storage under the database is
// full (SQLITE_FULL: the disk, or the database's max_page_count). SQLite
// rolled the transaction back, so nothing of the write was stored; the
// client-id makes sending it again safe all the same.
var errFull = parley.Errorf(parley.CodeUnavailable,
	"the server's storage is full; send again later with the same client-id")

// fullQuiet is how long writes must go without a refusal for a committed
// one to end the full state: the Retry-After that clients are told.
const fullQuiet = 5 * time.Second

// fullState logs when writes start failing for a full storage, once, and
// when a write succeeds again, once, however many are refused in between;
// it counts the refusals (parley_store_full_total) and shows the state
// (parley_store_full) and, through Store.StorageFull, /readyz.
//
// A write committed once none was refused for fullQuiet ends the state.
// Until then a committed write does not: on a disk with a little room,
// writes that fit in pages the database has already (a read mark, an
// update) succeed while those that need new ones (a message) are refused,
// and ending the state at each would log two lines per alternation, the
// flood the state is for.
type fullState struct {
	log     *slog.Logger
	refused prometheus.Counter // parley_store_full_total
	gauge   prometheus.Gauge   // parley_store_full
	down    atomic.Bool        // set while since is not zero: ok's fast path
	now     func() time.Time   // time.Now; a test's clock

	mu    sync.Mutex // guards the following fields
	since time.Time  // zero while writes succeed
	last  time.Time  // the latest refusal
	fails uint64     // writes refused since
}

func newFullState(log *slog.Logger) *fullState {
	return &fullState{
		log: log,
		now: time.Now,
		refused: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_store_full_total",
			Help: "Writes refused as unavailable because the store's storage was full.",
		}),
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_store_full",
			Help: "1 while the store refuses writes because its storage is full, else 0.",
		}),
	}
}

// refuse records a write that failed with err, an SQLITE_FULL, and returns
// the error its caller gets: errFull, wrapping err.
func (f *fullState) refuse(err error) error {
	f.refused.Inc()
	now := f.now()
	f.mu.Lock()
	first := f.since.IsZero()
	if first {
		f.since = now
		f.down.Store(true)
		f.gauge.Set(1)
	}
	f.last = now
	f.fails++
	f.mu.Unlock()
	if first {
		f.log.Error("sqlite: storage full; refusing writes as unavailable until there is room again", "err", err)
	}
	return fmt.Errorf("%w: %w", errFull, err)
}

// ok records a write that was committed: it ends the state once no
// write was refused for fullQuiet.
func (f *fullState) ok() {
	if !f.down.Load() {
		return
	}
	now := f.now()
	f.mu.Lock()
	if f.since.IsZero() || now.Sub(f.last) < fullQuiet {
		f.mu.Unlock()
		return
	}
	since, fails := f.since, f.fails
	f.since, f.last, f.fails = time.Time{}, time.Time{}, 0
	f.down.Store(false)
	f.gauge.Set(0)
	f.mu.Unlock()
	f.log.Warn("sqlite: storage has room again; writes resume", "full", now.Sub(since).Round(time.Millisecond), "refused", fails)
}

// state returns when the storage was found full, zero if it is not, and
// how many writes were refused since.
func (f *fullState) state() (since time.Time, refused uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.since, f.fails
}

// StorageFull reports whether the store refuses writes because its storage
// is full: since when (zero when it does not), and how many it refused
// since. Reads are served meanwhile. The first write committed after 5 s
// without a refusal ends it.
func (s *Store) StorageFull() (since time.Time, refused uint64) { return s.full.state() }

// writeErr translates the error of a write from the group-commit writer:
// errClosed once closed, errFull (unavailable) for a full storage. A nil
// error or a write's own *parley.Error means its batch was committed.
func (s *Store) writeErr(err error) error {
	var pe *parley.Error
	switch {
	case err == nil, errors.As(err, &pe):
		s.full.ok()
	case errors.Is(err, groupcommit.ErrClosed):
		return errClosed
	case isFull(err):
		return s.full.refuse(err)
	}
	return err
}
