package storagefull

import (
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"parley"
)

// Quiet is how long writes must go without a refusal for a committed one
// to end the state: the Retry-After that clients are told.
const Quiet = 5 * time.Second

// ErrWrite is what a refused write gets: its transaction was rolled back,
// and the client-id makes sending it again safe.
var ErrWrite = parley.Errorf(parley.CodeUnavailable,
	"the server's storage is full; send again later with the same client-id")

// Writer is who made a refused write, the writer label of
// parley_store_full_total.
type Writer string

// The writers.
const (
	// Request is a write asked of the store through its methods (a
	// group-commit request: a send, an edit, a read mark, a retention
	// pass's deletions): its caller gets ErrWrite, a client sees
	// unavailable.
	Request Writer = "request"
	// Indexer is a round of the store's own search indexer: nobody
	// sees the refusal, the round is tried again after a pause.
	Indexer Writer = "indexer"
)

// State logs when writes start failing for a full storage, once, and when
// a write is committed again, once, however many are refused in between.
//
// A write committed once none was refused for Quiet ends the state. Until
// then a committed write does not: on a disk with a little room, writes
// that fit in pages the database has already (a read mark, an update)
// succeed while those that need new ones (a message) are refused, and
// ending the state at each would log two lines per alternation, the flood
// the state is for.
type State struct {
	name    string // the store's name in log lines: "sqlite", "postgres"
	log     *slog.Logger
	refused *prometheus.CounterVec // parley_store_full_total{writer}
	gauge   prometheus.Gauge       // parley_store_full
	down    atomic.Bool            // set while since is not zero: OK's fast path

	// Now is the clock, time.Now by default; tests set it before use.
	Now func() time.Time

	mu    sync.Mutex // guards the following fields
	since time.Time  // zero while writes succeed
	last  time.Time  // the latest refusal
	fails uint64     // writes refused since
}

// New returns the state of the store name, logging to log; help ends the
// refusal counter's help text (what a full storage is for that store).
func New(name string, log *slog.Logger, help string) *State {
	f := &State{
		name: name,
		log:  log,
		Now:  time.Now,
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_store_full_total",
			Help: "Writes refused as unavailable because the store's storage was full" + help +
				", by writer: request (a write asked of the store, whose client was told), indexer (a round of the search indexer).",
		}, []string{"writer"}),
		gauge: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_store_full",
			Help: "1 while the store refuses writes because its storage is full, else 0.",
		}),
	}
	for _, w := range []Writer{Request, Indexer} {
		f.refused.WithLabelValues(string(w)) // shown at 0 before the first
	}
	return f
}

// Collectors returns the state's metrics, for the store to register.
func (f *State) Collectors() []prometheus.Collector {
	return []prometheus.Collector{f.refused, f.gauge}
}

// Counter returns parley_store_full_total{writer="w"}, the writes of w
// refused.
func (f *State) Counter(w Writer) prometheus.Counter { return f.refused.WithLabelValues(string(w)) }

// Gauge returns parley_store_full, 1 while the state lasts.
func (f *State) Gauge() prometheus.Gauge { return f.gauge }

// Refuse records a write of w that failed with err, a full storage, and
// returns the error its caller gets: ErrWrite, wrapping err.
func (f *State) Refuse(w Writer, err error) error {
	f.refused.WithLabelValues(string(w)).Inc()
	now := f.Now()
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
		f.log.Error(f.name+": storage full; refusing writes as unavailable until there is room again", "err", err)
	}
	return fmt.Errorf("%w: %w", ErrWrite, err)
}

// OK records a write that was committed: it ends the state once no write
// was refused for Quiet.
func (f *State) OK() {
	if !f.down.Load() {
		return
	}
	now := f.Now()
	f.mu.Lock()
	if f.since.IsZero() || now.Sub(f.last) < Quiet {
		f.mu.Unlock()
		return
	}
	since, fails := f.since, f.fails
	f.since, f.last, f.fails = time.Time{}, time.Time{}, 0
	f.down.Store(false)
	f.gauge.Set(0)
	f.mu.Unlock()
	f.log.Warn(f.name+": storage has room again; writes resume", "full", now.Sub(since).Round(time.Millisecond), "refused", fails)
}

// State returns when the storage was found full, zero if it is not, and
// how many writes (of every writer) were refused since.
func (f *State) State() (since time.Time, refused uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.since, f.fails
}
