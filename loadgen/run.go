package loadgen

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// run is the state of one Run: options, the HTTP clients of the nodes, the
// recorder and the phase reported to Progress.
type run struct {
	scn        Scenario
	o          Options
	nodes      []*api
	rec        *Recorder
	res        Result
	setupStart time.Time

	// Progress state, read by the ticker. A phase's name, start, bound
	// and units are one value, so that a report never shows one phase's
	// name with another's numbers.
	phase atomic.Pointer[phaseState]
	done  atomic.Int64
	total atomic.Int64
	extra func() int64 // Extra of each timeline point; nil for none

	usage usageSample // at the start of the measurement

	reportMu  sync.Mutex // serialises the calls of o.Progress (the ticker's and setPhase's)
	tickMu    sync.Mutex // guards lastPoint and calls of extra
	lastPoint Point
	stopTick  chan struct{}
	tickDone  chan struct{}
}

func newRun(s Scenario, o Options) *run {
	r := &run{scn: s, o: o, rec: NewRecorder(), setupStart: time.Now()}
	for _, u := range o.URLs {
		r.nodes = append(r.nodes, newAPI(trimTrailingSlash(u), o))
	}
	r.res = Result{
		Scenario: s, Target: o.Target, URLs: o.URLs, Started: time.Now().UTC(),
		Machine: machine(), Shape: shapeOf(o),
	}
	r.setPhase("setup", 0, 0)
	r.stopTick, r.tickDone = make(chan struct{}), make(chan struct{})
	go r.ticker()
	return r
}

// node returns the node of user i.
func (r *run) node(i int) *api { return r.nodes[i%len(r.nodes)] }

// A phaseState is the phase Progress reports, as setPhaseUnits began
// it. Immutable.
type phaseState struct {
	name  string
	start time.Time
	limit time.Duration // 0 for none
	units phaseUnits
}

// phaseUnits says what a phase's numbers count, for Progress.
type phaseUnits struct {
	done, rate string // Progress.DoneUnit, RateUnit
	upTo       bool   // Progress.UpTo
}

// setPhase starts a phase for Progress whose label says what it counts.
func (r *run) setPhase(name string, total int64, limit time.Duration) {
	r.setPhaseUnits(name, total, limit, phaseUnits{})
}

// setPhaseUnits starts a phase for Progress, saying what it counts.
func (r *run) setPhaseUnits(name string, total int64, limit time.Duration, u phaseUnits) {
	r.done.Store(0)
	r.total.Store(total)
	r.phase.Store(&phaseState{name: name, start: time.Now(), limit: limit, units: u})
	r.report(time.Now()) // at once: a short step shows too
}

// startMeasure ends the set-up and starts the measurement's clock and
// timeline.
func (r *run) startMeasure(total int64) time.Time {
	r.usage = r.sampleUsage()
	now := time.Now()
	r.res.SetupTime = now.Sub(r.setupStart).Seconds()
	r.rec.Restart(now)
	u := phaseUnits{done: plural(r.res.Unit), rate: plural(r.res.Unit) + "/s"}
	if r.res.Unit == "delivery" {
		u.done = "sent" // messaging counts its sends; the rate, deliveries
	}
	r.setPhaseUnits("measure", total, r.o.Duration, u)
	return now
}

// plural is the plural of a Result.Unit.
func plural(unit string) string {
	switch {
	case strings.HasSuffix(unit, "y"):
		return strings.TrimSuffix(unit, "y") + "ies"
	case strings.HasSuffix(unit, "ch"):
		return unit + "es"
	}
	return unit + "s"
}

// ticker closes a timeline point every second while measuring and reports
// progress five times a second. It stops when close is called.
func (r *run) ticker() {
	defer close(r.tickDone)
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	n := 0
	for {
		select {
		case <-r.stopTick:
			return
		case now := <-t.C:
			n++
			if measuring(r.phase.Load().name) && n%5 == 0 {
				r.tick(now)
			}
			r.report(now)
		}
	}
}

func (r *run) report(now time.Time) {
	if r.o.Progress == nil {
		return
	}
	r.reportMu.Lock()
	defer r.reportMu.Unlock()
	ps := r.phase.Load()
	_, errs := r.rec.Count()
	r.tickMu.Lock()
	last := r.lastPoint
	r.tickMu.Unlock()
	// now is when the ticker's tick fired, which can precede a phase
	// that began while the tick waited to run.
	elapsed := max(now.Sub(ps.start), 0)
	r.o.Progress(Progress{
		DoneUnit: ps.units.done,
		RateUnit: ps.units.rate,
		UpTo:     ps.units.upTo,
		Phase:    ps.name,
		Done:     r.done.Load(),
		Total:    r.total.Load(),
		Elapsed:  elapsed,
		Limit:    ps.limit,
		Errors:   errs,
		Last:     last,
		Waits:    r.waits(),
	})
}

// stopMeasure closes the last timeline point and records the measurement's
// length.
func (r *run) stopMeasure(start time.Time) {
	now := time.Now()
	r.res.Elapsed = now.Sub(start).Seconds()
	r.tick(now)
	r.res.Resources = r.usage.until(r.sampleUsage())
}

// tick closes a timeline point.
func (r *run) tick(now time.Time) {
	r.tickMu.Lock()
	defer r.tickMu.Unlock()
	var extra int64
	if r.extra != nil {
		extra = r.extra()
	}
	r.lastPoint = r.rec.Tick(now, extra)
}

// close stops the ticker.
func (r *run) close() {
	select {
	case <-r.stopTick:
	default:
		close(r.stopTick)
	}
	<-r.tickDone
	for _, n := range r.nodes {
		n.close()
	}
}

// waits counts the set-up requests that waited on a 429, over the nodes.
func (r *run) waits() int64 {
	var n int64
	for _, a := range r.nodes {
		n += a.waits.Load()
	}
	return n
}

// result fills the common fields of the result from the recorder.
func (r *run) result() *Result {
	res := r.res
	if n := r.waits(); n > 0 {
		res.Notes = append(res.Notes, fmt.Sprintf("set-up waited %d times on the server's --rest-send-rate (429 rate_limited); start the server under test with --rest-send-rate 0 to set up faster (nothing measured is affected)", n))
	}
	total := r.rec.Total()
	res.Latency = Summarize(total)
	res.Histogram = LogBuckets(total)
	res.Timeline = r.rec.Timeline()
	res.Errors = r.rec.Errors()
	for _, n := range res.Errors {
		res.ErrorCount += n
	}
	if res.Ops == 0 {
		res.Ops = total.TotalCount()
	}
	if res.Elapsed > 0 && res.Throughput == 0 {
		res.Throughput = float64(res.Ops) / res.Elapsed
	}
	if n := res.Ops + res.ErrorCount; n > 0 {
		res.ErrorRate = float64(res.ErrorCount) / float64(n)
	}
	return &res
}

// loop runs users concurrent workers, user i starting after i/users of the
// ramp-up. Each calls op for iteration 0, 1, ... until loops are done, the
// deadline passes or ctx ends; op returns "" for success or an error kind.
// Successes are recorded with their latency, errors by kind.
func (r *run) loop(ctx context.Context, users, loops int, deadline time.Time, op func(ctx context.Context, user, iter int) string) {
	var wg sync.WaitGroup
	start := time.Now()
	for u := 0; u < users; u++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if r.o.RampUp > 0 {
				delay := time.Duration(int64(r.o.RampUp) * int64(u) / int64(users))
				if !sleepUntil(ctx, start.Add(delay), deadline) {
					return
				}
			}
			for i := 0; i < loops; i++ {
				if ctx.Err() != nil || !time.Now().Before(deadline) {
					return
				}
				t0 := time.Now()
				kind := op(ctx, u, i)
				if kind == "" {
					r.rec.Record(u, time.Since(t0))
				} else if ctx.Err() == nil {
					r.rec.Error(u, kind)
				}
				r.done.Add(1)
			}
		}()
	}
	wg.Wait()
}

// sleepUntil sleeps until t; false when ctx ends or deadline comes first.
func sleepUntil(ctx context.Context, t, deadline time.Time) bool {
	if t.After(deadline) {
		return false
	}
	d := time.Until(t)
	if d <= 0 {
		return true
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// cpuModel reads the CPU model name on Linux; "" elsewhere.
func cpuModel() string {
	return procField("/proc/cpuinfo", "model name")
}

// memTotal reads the machine's memory on Linux; "" elsewhere.
func memTotal() string {
	return procField("/proc/meminfo", "MemTotal")
}

func procField(path, key string) string {
	f, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
