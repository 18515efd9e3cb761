package loadgen

import (
	"math"
	"sort"
	"sync"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: latencies are recorded in microseconds, from 1 µs to
// 10 minutes, with 3 significant digits (an error of at most 0.1%).
const (
	histLowest  = 1
	histHighest = int64(10 * time.Minute / time.Microsecond)
	histDigits  = 3
)

func newHist() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histDigits)
}

// Latency summarises a latency histogram, in milliseconds.
type Latency struct {
	Count int64   `json:"count"`
	Mean  float64 `json:"mean_ms"`
	Min   float64 `json:"min_ms"`
	P50   float64 `json:"p50_ms"`
	P90   float64 `json:"p90_ms"`
	P95   float64 `json:"p95_ms"`
	P99   float64 `json:"p99_ms"`
	P999  float64 `json:"p99_9_ms"`
	Max   float64 `json:"max_ms"`
}

// Bucket is one bar of a latency histogram: Count values in (From, To]
// milliseconds.
type Bucket struct {
	From  float64 `json:"from_ms"`
	To    float64 `json:"to_ms"`
	Count int64   `json:"count"`
}

func usToMs(us int64) float64 { return float64(us) / 1000 }

// Summarize returns the percentiles of h.
func Summarize(h *hdrhistogram.Histogram) Latency {
	if h.TotalCount() == 0 {
		return Latency{}
	}
	return Latency{
		Count: h.TotalCount(),
		Mean:  h.Mean() / 1000,
		Min:   usToMs(h.Min()),
		P50:   usToMs(h.ValueAtQuantile(50)),
		P90:   usToMs(h.ValueAtQuantile(90)),
		P95:   usToMs(h.ValueAtQuantile(95)),
		P99:   usToMs(h.ValueAtQuantile(99)),
		P999:  usToMs(h.ValueAtQuantile(99.9)),
		Max:   usToMs(h.Max()),
	}
}

// bucketsPerDecade is the resolution of the histogram chart.
const bucketsPerDecade = 10

// LogBuckets folds h into buckets of equal width on a log scale (ten per
// decade of milliseconds), from the first to the last non-empty one.
func LogBuckets(h *hdrhistogram.Histogram) []Bucket {
	if h.TotalCount() == 0 {
		return nil
	}
	counts := map[int]int64{}
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		// Place the bar by its upper edge: a value v lands in bucket
		// ceil(log10(v ms) * bucketsPerDecade).
		ms := usToMs(max(bar.To, 1))
		counts[int(math.Ceil(math.Log10(ms)*bucketsPerDecade-1e-9))] += bar.Count
	}
	keys := make([]int, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	var out []Bucket
	for k := keys[0]; k <= keys[len(keys)-1]; k++ {
		out = append(out, Bucket{
			From:  math.Pow(10, float64(k-1)/bucketsPerDecade),
			To:    math.Pow(10, float64(k)/bucketsPerDecade),
			Count: counts[k],
		})
	}
	return out
}

// Point is one interval of a run's timeline.
type Point struct {
	At     float64 `json:"t_s"`    // end of the interval, seconds since the measurement started
	Ops    int64   `json:"ops"`    // operations completed in the interval
	Rate   float64 `json:"rate"`   // operations per second over the interval
	Errors int64   `json:"errors"` // errors in the interval
	P50    float64 `json:"p50_ms"` // latency percentiles of the interval
	P90    float64 `json:"p90_ms"` //
	P99    float64 `json:"p99_ms"` //
	Max    float64 `json:"max_ms"` //
	Extra  int64   `json:"extra"`  // scenario-specific counter (messages sent in messaging scenarios)
}

// recorderShards spreads concurrent recording over several locks.
const recorderShards = 16

// Recorder collects latencies and errors from many goroutines: a total
// histogram for the summary and a window histogram that Tick folds into the
// timeline. Callers pass a shard hint (a worker number) to spread
// contention.
type Recorder struct {
	shards [recorderShards]recShard

	mu       sync.Mutex // guards the following fields
	timeline []Point
	last     time.Time
	start    time.Time
}

type recShard struct {
	mu     sync.Mutex // guards the following fields
	total  *hdrhistogram.Histogram
	window *hdrhistogram.Histogram
	errs   map[string]int64
	wErrs  int64
	_      [64]byte // keep shards on separate cache lines
}

// NewRecorder returns an empty Recorder whose timeline starts now.
func NewRecorder() *Recorder {
	r := &Recorder{}
	for i := range r.shards {
		s := &r.shards[i]
		s.total, s.window, s.errs = newHist(), newHist(), map[string]int64{}
	}
	r.Restart(time.Now())
	return r
}

// Restart empties the timeline and starts it at t (the start of the
// measurement); what was recorded before stays in the totals.
func (r *Recorder) Restart(t time.Time) {
	r.mu.Lock()
	r.start, r.last, r.timeline = t, t, nil
	r.mu.Unlock()
}

// Record adds one successful operation of duration d.
func (r *Recorder) Record(hint int, d time.Duration) {
	us := max(d.Microseconds(), 1)
	if us > histHighest {
		us = histHighest
	}
	s := &r.shards[uint(hint)%recorderShards]
	s.mu.Lock()
	s.total.RecordValue(us)
	s.window.RecordValue(us)
	s.mu.Unlock()
}

// Error counts one failed operation of the given kind.
func (r *Recorder) Error(hint int, kind string) {
	s := &r.shards[uint(hint)%recorderShards]
	s.mu.Lock()
	s.errs[kind]++
	s.wErrs++
	s.mu.Unlock()
}

// Tick closes the current window at now, appends it to the timeline and
// returns it. extra is stored as the point's Extra.
func (r *Recorder) Tick(now time.Time, extra int64) Point {
	w := newHist()
	var errs int64
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		w.Merge(s.window)
		s.window.Reset()
		errs += s.wErrs
		s.wErrs = 0
		s.mu.Unlock()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	span := now.Sub(r.last).Seconds()
	r.last = now
	p := Point{
		At:     now.Sub(r.start).Seconds(),
		Ops:    w.TotalCount(),
		Errors: errs,
		Extra:  extra,
	}
	if span > 0 {
		p.Rate = float64(p.Ops) / span
	}
	if w.TotalCount() > 0 {
		p.P50 = usToMs(w.ValueAtQuantile(50))
		p.P90 = usToMs(w.ValueAtQuantile(90))
		p.P99 = usToMs(w.ValueAtQuantile(99))
		p.Max = usToMs(w.Max())
	}
	r.timeline = append(r.timeline, p)
	return p
}

// Timeline returns the points so far.
func (r *Recorder) Timeline() []Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Point(nil), r.timeline...)
}

// Total returns a merged copy of the total histogram.
func (r *Recorder) Total() *hdrhistogram.Histogram {
	h := newHist()
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		h.Merge(s.total)
		s.mu.Unlock()
	}
	return h
}

// Errors returns the error counts by kind.
func (r *Recorder) Errors() map[string]int64 {
	out := map[string]int64{}
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		for k, n := range s.errs {
			out[k] += n
		}
		s.mu.Unlock()
	}
	return out
}

// Count returns the successful operations and errors recorded so far.
func (r *Recorder) Count() (ops, errs int64) {
	for i := range r.shards {
		s := &r.shards[i]
		s.mu.Lock()
		ops += s.total.TotalCount()
		for _, n := range s.errs {
			errs += n
		}
		s.mu.Unlock()
	}
	return ops, errs
}
