package groupcommit_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley/groupcommit"
	"parley/parleytest"
)

// double commits each request by doubling it; odd inputs fail on their own.
func double(batch []*groupcommit.Request[int, int]) (func(), error) {
	for _, r := range batch {
		if r.In%2 == 1 {
			r.Err = errors.New("odd")
			continue
		}
		r.Out = 2 * r.In
	}
	return nil, nil
}

func TestDoResults(t *testing.T) {
	w := groupcommit.New(double, groupcommit.Config{})
	defer w.Close()
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			got, err := w.Do(context.Background(), i)
			if i%2 == 1 {
				if err == nil {
					t.Errorf("Do(%d) error = nil, want odd", i)
				}
				return
			}
			if err != nil || got != 2*i {
				t.Errorf("Do(%d) = %d, %v, want %d, nil", i, got, err, 2*i)
			}
		})
	}
	wg.Wait()
	if st := w.Stats(); st.Requests != 200 || st.Batches == 0 || st.Batches > 200 {
		t.Errorf("Stats() = %+v, want 200 requests in 1 to 200 batches", st)
	}
}

func TestBatching(t *testing.T) {
	// The first commit holds the writer until every other caller has
	// queued behind it, so the batches that follow are full.
	var sizes []int
	var mu sync.Mutex
	release := make(chan struct{})
	var first sync.Once
	var firstSize atomic.Int64 // the held batch's size, once it is held
	held := func(batch []*groupcommit.Request[int, int]) (func(), error) {
		first.Do(func() {
			firstSize.Store(int64(len(batch)))
			<-release
		})
		return double(batch)
	}
	w := groupcommit.New(held, groupcommit.Config{MaxBatch: 50, QueueSize: 500, OnBatch: func(n int, _ time.Duration, _ error) {
		mu.Lock()
		sizes = append(sizes, n)
		mu.Unlock()
	}})
	var wg sync.WaitGroup
	for i := range 500 {
		wg.Go(func() { w.Do(context.Background(), 2*i) })
	}
	waitFor(t, "all 500 requests held or queued", func() bool {
		return firstSize.Load() > 0 && w.Queued() == 500-int(firstSize.Load())
	})
	close(release)
	wg.Wait()
	w.Close()
	st := w.Stats()
	if st.Requests != 500 {
		t.Errorf("Stats().Requests = %d, want 500", st.Requests)
	}
	rest := 500 - int(firstSize.Load())
	if want := uint64(1 + (rest+49)/50); st.Batches != want {
		t.Errorf("Stats().Batches = %d, want %d (the held one of %d, then full batches of 50)", st.Batches, want, firstSize.Load())
	}
	total := 0
	for _, n := range sizes {
		if n > 50 {
			t.Errorf("batch of %d, want at most MaxBatch 50", n)
		}
		total += n
	}
	if total != 500 || uint64(len(sizes)) != st.Batches {
		t.Errorf("OnBatch saw %d requests in %d batches, want 500 in %d", total, len(sizes), st.Batches)
	}
}

func TestBatchError(t *testing.T) {
	boom := errors.New("boom")
	fail := func(batch []*groupcommit.Request[int, int]) (func(), error) {
		double(batch)
		return func() { t.Errorf("done called for a failed batch") }, boom
	}
	w := groupcommit.New(fail, groupcommit.Config{})
	defer w.Close()
	if got, err := w.Do(context.Background(), 2); !errors.Is(err, boom) || got != 0 {
		t.Errorf("Do() = %d, %v, want 0, boom", got, err)
	}
	if st := w.Stats(); st.Failed != 1 {
		t.Errorf("Stats().Failed = %d, want 1", st.Failed)
	}
}

func TestPanic(t *testing.T) {
	w := groupcommit.New(func([]*groupcommit.Request[int, int]) (func(), error) { panic("bug") }, groupcommit.Config{})
	defer w.Close()
	if _, err := w.Do(context.Background(), 2); err == nil {
		t.Errorf("Do() error = nil, want the panic as an error")
	}
	// The writer survives.
	if _, err := w.Do(context.Background(), 4); err == nil {
		t.Errorf("second Do() error = nil, want the panic as an error")
	}
}

func TestCancelQueued(t *testing.T) {
	var committed atomic.Int64
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	commit := func(batch []*groupcommit.Request[int, int]) (func(), error) {
		select {
		case started <- struct{}{}:
		default:
		}
		<-release
		for _, r := range batch {
			committed.Add(int64(r.In))
		}
		return nil, nil
	}
	w := groupcommit.New(commit, groupcommit.Config{})
	done := make(chan struct{})
	go func() { w.Do(context.Background(), 1); close(done) }()
	<-started // the writer is busy with request 1

	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error)
	go func() { _, err := w.Do(ctx, 100); errc <- err }()
	waitFor(t, "the request queued", func() bool { return w.Queued() == 1 })
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("Do(cancelled) error = %v, want context.Canceled", err)
	}
	close(release)
	<-done
	w.Close()
	if got := committed.Load(); got != 1 {
		t.Errorf("committed sum = %d, want 1 (the cancelled request never runs)", got)
	}
}

// waitFor polls cond until it holds, failing the test after 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	parleytest.Eventually(t, 10*time.Second, cond, "not %s after 10 s", what)
}

func TestCloseDrains(t *testing.T) {
	var committed atomic.Int64
	commit := func(batch []*groupcommit.Request[int, int]) (func(), error) {
		time.Sleep(time.Millisecond)
		committed.Add(int64(len(batch)))
		return nil, nil
	}
	w := groupcommit.New(commit, groupcommit.Config{MaxBatch: 4})
	var wg sync.WaitGroup
	var ok atomic.Int64
	for i := range 100 {
		wg.Go(func() {
			if _, err := w.Do(context.Background(), i); err == nil {
				ok.Add(1)
			} else if !errors.Is(err, groupcommit.ErrClosed) {
				t.Errorf("Do() error = %v, want nil or ErrClosed", err)
			}
		})
	}
	// Close while requests are in flight: after the first batch, with
	// most of the hundred still queued or on their way.
	waitFor(t, "a batch committed", func() bool { return committed.Load() > 0 })
	w.Close()
	wg.Wait()
	if committed.Load() != ok.Load() {
		t.Errorf("committed %d requests, %d callers saw success", committed.Load(), ok.Load())
	}
	if _, err := w.Do(context.Background(), 1); !errors.Is(err, groupcommit.ErrClosed) {
		t.Errorf("Do() after Close error = %v, want ErrClosed", err)
	}
	w.Close() // idempotent
}

// TestFlush: with a Flush stage, callers return only after a Flush that
// began after their batch was committed, and done runs in commit order.
func TestFlush(t *testing.T) {
	var mu sync.Mutex
	var committedN, flushedN int // requests committed; requests covered by a Flush
	var order []int              // batch numbers, as done runs
	batchNo := 0
	commit := func(batch []*groupcommit.Request[int, int]) (func(), error) {
		double(batch)
		mu.Lock()
		committedN += len(batch)
		batchNo++
		n := batchNo
		mu.Unlock()
		return func() {
			mu.Lock()
			order = append(order, n)
			mu.Unlock()
		}, nil
	}
	flush := func() error {
		time.Sleep(time.Millisecond) // an fsync
		mu.Lock()
		flushedN = committedN
		mu.Unlock()
		return nil
	}
	w := groupcommit.New(commit, groupcommit.Config{MaxBatch: 8, Flush: flush})
	doAll(t, w, 300)
	mu.Lock()
	defer mu.Unlock()
	if flushedN != 300 {
		t.Errorf("a Flush covered %d requests at the end, want all 300", flushedN)
	}
	for i, n := range order {
		if n != i+1 {
			t.Fatalf("done order = %v, want commit order", order)
		}
	}
	st := w.Stats()
	if st.Flushes == 0 || st.Flushes > st.Batches {
		t.Errorf("Stats() = %+v, want 1 to %d flushes", st, st.Batches)
	}
}

// doAll calls Do(2i) for each i < n from n goroutines at once, checks
// each result, and closes w once all have returned.
func doAll(t *testing.T, w *groupcommit.Writer[int, int], n int) {
	t.Helper()
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			got, err := w.Do(context.Background(), 2*i)
			if err != nil || got != 4*i {
				t.Errorf("Do(%d) = %d, %v, want %d", 2*i, got, err, 4*i)
			}
		})
	}
	wg.Wait()
	w.Close()
}

func TestFlushError(t *testing.T) {
	boom := errors.New("fsync failed")
	var fail atomic.Bool
	w := groupcommit.New(double, groupcommit.Config{Flush: func() error {
		if fail.Load() {
			return boom
		}
		return nil
	}})
	defer w.Close()
	if _, err := w.Do(context.Background(), 2); err != nil {
		t.Fatalf("Do() error = %v", err)
	}
	fail.Store(true)
	if _, err := w.Do(context.Background(), 2); !errors.Is(err, boom) {
		t.Errorf("Do() error = %v, want the flush error", err)
	}
	fail.Store(false)
	if _, err := w.Do(context.Background(), 2); !errors.Is(err, boom) {
		t.Errorf("Do() after a failed flush error = %v, want the flush error (broken)", err)
	}
}

// TestOnTiming: each committed request's stages are reported once, before
// its caller returns, and its fsync stage covers the whole Flush; a
// request of a batch that failed is not reported.
func TestOnTiming(t *testing.T) {
	var mu sync.Mutex
	var inFlush time.Duration // the Flush calls' own time, measured inside
	var timings []groupcommit.Timing
	flush := func() error {
		start := time.Now()
		runtime.Gosched()
		mu.Lock()
		inFlush = max(inFlush, time.Since(start))
		mu.Unlock()
		return nil
	}
	commit := func(batch []*groupcommit.Request[int, int]) (func(), error) {
		for _, r := range batch {
			if r.In < 0 {
				return nil, errors.New("negative")
			}
		}
		return double(batch)
	}
	w := groupcommit.New(commit, groupcommit.Config{Flush: flush, OnTiming: func(tm groupcommit.Timing) {
		mu.Lock()
		timings = append(timings, tm)
		mu.Unlock()
	}})
	defer w.Close()
	reported := func() int { mu.Lock(); defer mu.Unlock(); return len(timings) }
	for _, in := range []int{2, -2, 4, -4, 6} {
		before := reported()
		_, err := w.Do(context.Background(), in)
		want := before + 1
		if in < 0 { // its batch fails
			want = before
		}
		if got := reported(); got != want {
			t.Errorf("Do(%d) (error %v): %d timings reported when it returned, want %d", in, err, got, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	var longest time.Duration
	for _, tm := range timings {
		if tm.Queue < 0 || tm.Commit < 0 || tm.Wait < 0 || tm.Flush < 0 || tm.Done < 0 {
			t.Errorf("Timing %+v has a negative stage", tm)
		}
		longest = max(longest, tm.Flush)
	}
	if longest < inFlush {
		t.Errorf("longest fsync stage %v, want at least the longest Flush call's own time %v", longest, inFlush)
	}
}

// TestFlushNoWait: with MaxUnflushed 2, while a Flush runs, the writer
// commits a request that arrives at once, also when a batch committed
// during that Flush waits for the next one already, and the next Flush
// covers both; none of their callers returns before it.
func TestFlushNoWait(t *testing.T) {
	h := newHeldFlush(nil)
	committed, entered := h.committed, h.entered
	w := groupcommit.New(h.commit, groupcommit.Config{Flush: h.flush, MaxUnflushed: 2})
	defer w.Close()
	defer h.releaseFlush() // before Close, on failure too
	var wg sync.WaitGroup
	var returned atomic.Int64
	do := func(in int) {
		wg.Go(func() {
			if got, err := w.Do(context.Background(), in); err != nil || got != 2*in {
				t.Errorf("Do(%d) = %d, %v, want %d, nil", in, got, err, 2*in)
			}
			returned.Add(1)
		})
	}
	do(2)
	<-entered
	if got := <-committed; got != 2 {
		t.Fatalf("committed %d first, want 2", got)
	}
	// Two more requests, one after the other, while the first Flush
	// runs: each is committed at once.
	for _, in := range []int{4, 6} {
		do(in)
		select {
		case got := <-committed:
			if got != in {
				t.Fatalf("committed %d, want %d", got, in)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("request %d not committed after 10 s while a Flush runs: the writer waits for the flusher", in)
		}
	}
	if n := returned.Load(); n != 0 {
		t.Errorf("%d callers returned before their Flush", n)
	}
	// A batch is handed to the flusher just after its commit returns:
	// wait until both are, so that one Flush can take them together.
	parleytest.Eventually(t, 10*time.Second, func() bool { return w.Unflushed() == 2 }, "%d batches wait for the flusher, want 2", w.Unflushed())
	h.releaseFlush()
	wg.Wait()
	if st := w.Stats(); st.Batches != 3 || st.Flushes != 2 {
		t.Errorf("Stats() = %+v, want 3 batches and 2 flushes (one for the two committed during the first)", st)
	}
}

// TestFlushErrorCommittedMeanwhile: a batch committed while a Flush runs
// that then fails is not made durable by a later Flush that succeeds: it
// fails with the first error, and no Flush is tried again.
func TestFlushErrorCommittedMeanwhile(t *testing.T) {
	boom := errors.New("fsync failed")
	h := newHeldFlush(boom) // a later fsync reports success: it proves nothing
	committed, entered := h.committed, h.entered
	w := groupcommit.New(h.commit, groupcommit.Config{Flush: h.flush})
	defer w.Close()
	defer h.releaseFlush()
	errs := make(chan error, 2)
	go func() { _, err := w.Do(context.Background(), 2); errs <- err }()
	<-entered
	<-committed
	go func() { _, err := w.Do(context.Background(), 4); errs <- err }()
	select {
	case <-committed:
	case <-time.After(10 * time.Second):
		t.Fatal("the second request was not committed after 10 s while a Flush runs")
	}
	h.releaseFlush()
	for range 2 {
		if err := <-errs; !errors.Is(err, boom) {
			t.Errorf("Do() error = %v, want the failed Flush's", err)
		}
	}
	if n := h.calls.Load(); n != 1 {
		t.Errorf("Flush called %d times, want 1 (the Writer is broken after the first)", n)
	}
}

// heldFlush is a commit function that reports each committed input on
// committed, and a Flush whose first call holds until releaseFlush and
// returns firstErr (the slow fsync); later calls return nil at once.
type heldFlush struct {
	committed chan int
	entered   chan struct{} // closed when the first Flush begins
	release   chan struct{}
	once      sync.Once
	calls     atomic.Int64
	firstErr  error
}

func newHeldFlush(firstErr error) *heldFlush {
	return &heldFlush{committed: make(chan int, 10), entered: make(chan struct{}), release: make(chan struct{}), firstErr: firstErr}
}

func (h *heldFlush) commit(batch []*groupcommit.Request[int, int]) (func(), error) {
	double(batch)
	for _, r := range batch {
		h.committed <- r.In
	}
	return nil, nil
}

func (h *heldFlush) flush() error {
	if h.calls.Add(1) == 1 {
		close(h.entered)
		<-h.release
		return h.firstErr
	}
	return nil
}

func (h *heldFlush) releaseFlush() { h.once.Do(func() { close(h.release) }) }

// goid returns the calling goroutine's id, from the first line of its
// stack trace ("goroutine N [running]:").
func goid() string {
	var buf [64]byte
	n := runtime.Stack(buf[:], false)
	f := strings.Fields(string(buf[:n]))
	if len(f) < 2 {
		return ""
	}
	return f[1]
}

// TestFlushInline: with FlushInline true the writer runs each Flush
// itself, right after the commit it covers, and every caller still
// returns only after it, done in commit order.
func TestFlushInline(t *testing.T) {
	var mu sync.Mutex
	var committer string     // the goroutine that ran the last commit
	var order []int          // batch numbers, as done runs
	var elsewhere int        // Flush calls on another goroutine than the commit's
	var early []int          // batches whose done ran before a Flush covered them
	batchNo, flushed := 0, 0 // the last batch committed; the last a Flush covered
	commit := func(batch []*groupcommit.Request[int, int]) (func(), error) {
		double(batch)
		mu.Lock()
		defer mu.Unlock()
		committer = goid()
		batchNo++
		n := batchNo
		return func() {
			mu.Lock()
			defer mu.Unlock()
			order = append(order, n)
			if flushed < n {
				early = append(early, n)
			}
		}, nil
	}
	flush := func() error {
		mu.Lock()
		defer mu.Unlock()
		if goid() != committer {
			elsewhere++
		}
		flushed = batchNo
		return nil
	}
	w := groupcommit.New(commit, groupcommit.Config{MaxBatch: 8, Flush: flush, FlushInline: func() bool { return true }})
	doAll(t, w, 200)
	mu.Lock()
	defer mu.Unlock()
	if elsewhere != 0 {
		t.Errorf("%d Flush calls ran on another goroutine than the writer's", elsewhere)
	}
	if len(early) > 0 {
		t.Errorf("batches %v completed before a Flush covered them", early)
	}
	for i, n := range order {
		if n != i+1 {
			t.Fatalf("done order = %v, want commit order", order)
		}
	}
	if st := w.Stats(); st.Flushes != st.Batches || st.Batches == 0 {
		t.Errorf("Stats() = %+v, want one Flush per batch", st)
	}
}

// TestFlushInlineWaitsForTheFlusher: a batch committed while the flusher
// runs a Flush goes to the flusher too, whatever FlushInline says, so that
// batches complete in commit order and Flush never runs twice at once.
func TestFlushInlineWaitsForTheFlusher(t *testing.T) {
	h := newHeldFlush(nil)
	var mu sync.Mutex
	var order []int
	commit := func(batch []*groupcommit.Request[int, int]) (func(), error) {
		h.commit(batch)
		n := batch[0].In
		return func() {
			mu.Lock()
			order = append(order, n)
			mu.Unlock()
		}, nil
	}
	var asked atomic.Int64
	inline := func() bool { return asked.Add(1) > 1 } // the first batch goes to the flusher
	w := groupcommit.New(commit, groupcommit.Config{Flush: h.flush, FlushInline: inline})
	defer w.Close()
	defer h.releaseFlush()
	errs := make(chan error, 2)
	go func() { _, err := w.Do(context.Background(), 2); errs <- err }()
	<-h.entered // the flusher holds the first Flush
	<-h.committed
	go func() { _, err := w.Do(context.Background(), 4); errs <- err }()
	select {
	case <-h.committed:
	case <-time.After(10 * time.Second):
		t.Fatal("the second request was not committed after 10 s while a Flush runs")
	}
	h.releaseFlush()
	for range 2 {
		if err := <-errs; err != nil {
			t.Errorf("Do() error = %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(order) != "[2 4]" {
		t.Errorf("done order %v, want [2 4]: the second batch went around the running Flush", order)
	}
	if n := h.calls.Load(); n != 2 {
		t.Errorf("Flush called %d times, want 2", n)
	}
}
