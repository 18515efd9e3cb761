package groupcommit

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// ErrClosed is returned by Do after Close.
var ErrClosed = errors.New("groupcommit: writer closed")

// Request is one caller's request as the commit function sees it: the input
// given to Do and the output and error the commit function sets for it.
type Request[In, Out any] struct {
	In  In
	Out Out
	// Err is this request's own failure (a logical one, such as a name
	// taken); it does not affect the other requests of the batch.
	Err error

	state  atomic.Int32 // queued, taken or dropped
	done   chan struct{}
	queued time.Time // when Do handed it to the writer (Config.OnTiming)
}

// Request states.
const (
	queued int32 = iota
	taken
	dropped
)

// CommitFunc runs one batch, in order, in one transaction, and sets Out and
// Err of each request. A non-nil error means the transaction failed: every
// request of the batch then fails with that error, whatever was set.
// Otherwise done, when not nil, is called once the batch is durable (after
// its Flush, with Config.Flush) and before any of its callers returns, in
// commit order, from the writer or the flusher goroutine.
type CommitFunc[In, Out any] func(batch []*Request[In, Out]) (done func(), err error)

// Config tunes a Writer. Zero fields take the documented defaults.
type Config struct {
	// MaxBatch is the most requests one batch holds. Default 256.
	MaxBatch int
	// QueueSize is how many requests may wait for the writer before Do
	// blocks (back-pressure). Default 4 × MaxBatch.
	QueueSize int
	// Flush, when set, is the second stage of every commit (an fsync): see
	// the package doc. It is called by one goroutine at a time (the
	// flusher, or the writer with FlushInline, each call ordered after the
	// last), and covers every batch whose commit function returned before
	// the call. An error fails the batches it covered and breaks the
	// Writer: every later request fails with it too.
	Flush func() error
	// OnBatch, when set, is called by the writer after each batch with its
	// size, the time the commit function took and its error (metrics hook).
	// It must not block.
	OnBatch func(size int, took time.Duration, err error)
	// MaxUnflushed is how many committed batches may wait for the next
	// Flush to begin (with Config.Flush); past it the writer waits for the
	// flusher before it takes the next batch, so that requests gather into
	// one batch. Default DefaultMaxUnflushed (1). See the package doc.
	MaxUnflushed int
	// FlushInline, when set with Flush, is asked by the writer after each
	// commit while no Flush runs or waits: true, and the writer calls
	// Flush itself and completes the batch, instead of handing it to the
	// flusher (see the package doc). It is never called while Flush runs,
	// so it may read what Flush keeps. Nil: always the flusher.
	FlushInline func() bool
	// Yield, when set, replaces runtime.Gosched as the writer's way to let
	// the callers it just woke run before it takes its next batch (see the
	// package doc); tests set it.
	Yield func()
	// OnTiming, when set, is called once for each request of a batch that
	// committed (and flushed), with where its time went, before its caller
	// wakes, from the writer or the flusher goroutine (metrics hook). It
	// must not block.
	OnTiming func(Timing)
}

// Timing is where one request's time went between Do and its completion,
// stage by stage; the stages follow each other without a gap.
type Timing struct {
	Queue  time.Duration // from Do's hand-off until the writer began its batch
	Commit time.Duration // its batch's commit function
	Wait   time.Duration // from the commit's end until the Flush that covered it began (Config.Flush)
	Flush  time.Duration // that Flush
	Done   time.Duration // from the end of its Flush (or commit) until its batch's done returned
}

// DefaultMaxBatch is the default Config.MaxBatch.
const DefaultMaxBatch = 256

// DefaultMaxUnflushed is the default Config.MaxUnflushed.
const DefaultMaxUnflushed = 1

// YieldAfter is the number of callers the writer must have woken itself
// after a batch before it yields to them (see the package doc).
const YieldAfter = 64

// yieldTurns bounds the writer's yields before one batch.
const yieldTurns = 8

// Stats are a Writer's counters since New.
type Stats struct {
	Batches    uint64        // batches committed or failed
	Requests   uint64        // requests in those batches
	Failed     uint64        // batches whose commit function returned an error
	CommitTime time.Duration // total time spent in the commit function
	Flushes    uint64        // calls of Config.Flush
	FlushTime  time.Duration // total time spent in Config.Flush
	Yields     uint64        // the writer's yields to the callers it woke
}

// MeanBatch is the mean number of requests per batch.
func (s Stats) MeanBatch() float64 {
	if s.Batches == 0 {
		return 0
	}
	return float64(s.Requests) / float64(s.Batches)
}

// MeanCommit is the mean time one batch took in the commit function.
func (s Stats) MeanCommit() time.Duration {
	if s.Batches == 0 {
		return 0
	}
	return s.CommitTime / time.Duration(s.Batches)
}

// Writer batches the requests of concurrent callers and commits them from
// one goroutine. Create it with New; stop it with Close.
type Writer[In, Out any] struct {
	commit       CommitFunc[In, Out]
	flush        func() error
	flushInline  func() bool
	maxBatch     int
	onBatch      func(int, time.Duration, error)
	onTiming     func(Timing)
	yield        func()
	maxUnflushed int
	queue        chan *Request[In, Out]
	stopped      chan struct{}         // closed when the writer (and flusher) have returned
	broken       atomic.Pointer[error] // the Flush error that broke the Writer

	fmu      sync.Mutex           // guards the following fields
	flushq   []committed[In, Out] // batches committed, waiting for a Flush, in commit order
	flushing bool                 // the flusher took batches it has not completed yet
	fclosed  bool                 // the writer has returned: the flusher ends once flushq is empty
	fwake    chan struct{}        // capacity 1: flushq became non-empty, or fclosed was set
	room     sync.Cond            // on fmu: signalled when the flusher takes flushq

	mu     sync.RWMutex // guards closed; held for reading while sending to queue
	closed bool

	batches, requests, failed, commitNanos, flushes, flushNanos, yields atomic.Uint64

	// expect is the writer's own: the queue length its next batch waits
	// for (yieldToWoken), set when it woke YieldAfter callers or more
	// itself; 0: none.
	expect int
}

// committed is a batch whose commit function returned, waiting for a Flush.
type committed[In, Out any] struct {
	batch []*Request[In, Out]
	done  func()
	start time.Time // when its commit began
	end   time.Time // when its commit returned
}

// New starts a Writer that commits batches with commit.
func New[In, Out any](commit CommitFunc[In, Out], cfg Config) *Writer[In, Out] {
	if cfg.MaxBatch <= 0 {
		cfg.MaxBatch = DefaultMaxBatch
	}
	if cfg.QueueSize <= 0 {
		cfg.QueueSize = 4 * cfg.MaxBatch
	}
	if cfg.MaxUnflushed <= 0 {
		cfg.MaxUnflushed = DefaultMaxUnflushed
	}
	w := &Writer[In, Out]{
		commit:       commit,
		flush:        cfg.Flush,
		flushInline:  cfg.FlushInline,
		maxBatch:     cfg.MaxBatch,
		onBatch:      cfg.OnBatch,
		onTiming:     cfg.OnTiming,
		yield:        cfg.Yield,
		maxUnflushed: cfg.MaxUnflushed,
		queue:        make(chan *Request[In, Out], cfg.QueueSize),
		stopped:      make(chan struct{}),
	}
	if w.yield == nil {
		w.yield = runtime.Gosched
	}
	if w.flush != nil {
		w.fwake = make(chan struct{}, 1)
		w.room.L = &w.fmu
		flusherDone := make(chan struct{})
		go w.runFlusher(flusherDone)
		go func() {
			w.run()
			w.fmu.Lock()
			w.fclosed = true
			w.fmu.Unlock()
			w.wakeFlusher()
			<-flusherDone
			close(w.stopped)
		}()
		return w
	}
	go func() {
		w.run()
		close(w.stopped)
	}()
	return w
}

// Do queues in for the next batch and waits until it is committed, then
// returns the output and error the commit function set for it, or the
// batch's error. It fails with ErrClosed after Close, and with ctx's error
// when ctx ends before the writer took the request (see the package doc).
func (w *Writer[In, Out]) Do(ctx context.Context, in In) (Out, error) {
	var zero Out
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if err := w.broken.Load(); err != nil {
		return zero, *err
	}
	r := &Request[In, Out]{In: in, done: make(chan struct{})}
	if w.onTiming != nil {
		r.queued = time.Now()
	}
	w.mu.RLock()
	if w.closed {
		w.mu.RUnlock()
		return zero, ErrClosed
	}
	select {
	case w.queue <- r:
	case <-ctx.Done():
		w.mu.RUnlock()
		return zero, ctx.Err()
	}
	w.mu.RUnlock()

	select {
	case <-r.done:
	case <-ctx.Done():
		if r.state.CompareAndSwap(queued, dropped) {
			return zero, ctx.Err()
		}
		<-r.done // in a batch already: its outcome is definite soon
	}
	return r.Out, r.Err
}

// Close stops accepting requests, waits until every accepted one is
// committed, and stops the writer. It is safe to call more than once.
func (w *Writer[In, Out]) Close() error {
	w.mu.Lock()
	if !w.closed {
		w.closed = true
		close(w.queue) // no sender holds the read lock now
	}
	w.mu.Unlock()
	<-w.stopped
	return nil
}

// Queued returns how many requests wait for the writer: handed to Do and
// not yet taken into a batch. Tests wait on it instead of sleeping.
func (w *Writer[In, Out]) Queued() int { return len(w.queue) }

// Unflushed returns how many committed batches wait for the flusher to
// take them into a Flush. Tests wait on it instead of sleeping.
func (w *Writer[In, Out]) Unflushed() int {
	w.fmu.Lock()
	defer w.fmu.Unlock()
	return len(w.flushq)
}

// Stats returns the counters so far.
func (w *Writer[In, Out]) Stats() Stats {
	return Stats{
		Batches:    w.batches.Load(),
		Requests:   w.requests.Load(),
		Failed:     w.failed.Load(),
		CommitTime: time.Duration(w.commitNanos.Load()),
		Flushes:    w.flushes.Load(),
		FlushTime:  time.Duration(w.flushNanos.Load()),
		Yields:     w.yields.Load(),
	}
}

// run is the writer goroutine's loop: it ends when the queue is closed and
// drained.
func (w *Writer[In, Out]) run() {
	buf := make([]*Request[In, Out], 0, w.maxBatch)
	for r := range w.queue {
		w.awaitRoom()
		w.yieldToWoken()
		batch := buf[:0]
		if r.state.CompareAndSwap(queued, taken) {
			batch = append(batch, r)
		}
	gather:
		for len(batch) < w.maxBatch {
			select {
			case r, ok := <-w.queue:
				if !ok {
					break gather
				}
				if r.state.CompareAndSwap(queued, taken) {
					batch = append(batch, r)
				}
			default:
				break gather
			}
		}
		if len(batch) > 0 {
			w.runBatch(batch)
		}
		clear(buf[:cap(buf)]) // let the requests be collected
	}
}

// runBatch commits one batch and completes it, or hands it to the flusher.
func (w *Writer[In, Out]) runBatch(batch []*Request[In, Out]) {
	var done func()
	var err error
	start := time.Now()
	if broken := w.broken.Load(); broken != nil {
		err = *broken
	} else {
		done, err = w.safeCommit(batch)
	}
	end := time.Now()
	took := end.Sub(start)

	w.batches.Add(1)
	w.requests.Add(uint64(len(batch)))
	w.commitNanos.Add(uint64(took))
	if err != nil {
		w.failed.Add(1)
	}
	if w.onBatch != nil {
		w.onBatch(len(batch), took, err)
	}
	c := committed[In, Out]{batch: batch, done: done, start: start, end: end}
	if err != nil || w.flush == nil {
		w.completeHere(c, end, end, err)
		return
	}
	if w.flushInline != nil && w.flusherIdle() && w.flushInline() {
		start, end, err := w.flushOnce()
		w.completeHere(c, start, end, err)
		return
	}
	c.batch = slices.Clone(batch)
	w.fmu.Lock()
	w.flushq = append(w.flushq, c)
	w.fmu.Unlock()
	w.wakeFlusher()
}

// completeHere completes a batch on the writer goroutine and, when that
// woke YieldAfter callers or more, sets what the next batch waits for:
// all of them back besides those queued before they were woken, or a full
// batch (or queue), less the request the writer will hold already.
func (w *Writer[In, Out]) completeHere(c committed[In, Out], flushStart, flushEnd time.Time, err error) {
	backlog := len(w.queue) // before any of the callers is back
	w.complete(c, flushStart, flushEnd, err)
	w.expect = 0
	if n := len(c.batch); n >= YieldAfter {
		w.expect = min(backlog+n, w.maxBatch, cap(w.queue)+1) - 1
	}
}

// yieldToWoken lets the callers that completeHere woke run before the
// writer takes the next batch (see the package doc): it yields until the
// queue holds what completeHere expects, or a turn added nothing, at most
// yieldTurns times.
func (w *Writer[In, Out]) yieldToWoken() {
	want := w.expect // 0, or the queue is long enough: no turn
	w.expect = 0
	n := len(w.queue)
	for range yieldTurns {
		if n >= want {
			return
		}
		w.yield()
		w.yields.Add(1)
		before := n
		if n = len(w.queue); n == before {
			return // none came back this turn: the rest are not about to
		}
	}
}

// the batch (both the commit's end without one), for Config.OnTiming.
func (w *Writer[In, Out]) complete(c committed[In, Out], flushStart, flushEnd time.Time, err error) {
	batch := c.batch
	if err != nil {
		var zero Out
		for _, r := range batch {
			r.Out, r.Err = zero, err
		}
	} else if c.done != nil {
		c.done()
	}
	if err == nil && w.onTiming != nil {
		t := Timing{
			Commit: c.end.Sub(c.start),
			Wait:   flushStart.Sub(c.end),
			Flush:  flushEnd.Sub(flushStart),
			Done:   time.Since(flushEnd),
		}
		for _, r := range batch {
			t.Queue = c.start.Sub(r.queued)
			w.onTiming(t)
		}
	}
	for _, r := range batch {
		close(r.done)
	}
}

// safeCommit calls the commit function, turning a panic into an error for
// the batch so that its callers are not left waiting forever.
func (w *Writer[In, Out]) safeCommit(batch []*Request[In, Out]) (done func(), err error) {
	defer func() {
		if p := recover(); p != nil {
			done, err = nil, fmt.Errorf("groupcommit: commit panicked: %v", p)
		}
	}()
	return w.commit(batch)
}
