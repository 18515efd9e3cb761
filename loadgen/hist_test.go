package loadgen

import (
	"math"
	"os"
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	h := newHist()
	for v := int64(1); v <= 10000; v++ { // 1 µs .. 10 ms, uniform
		h.RecordValue(v)
	}
	got := Summarize(h)
	for _, tc := range []struct {
		name      string
		got, want float64
	}{
		{"p50", got.P50, 5},
		{"p90", got.P90, 9},
		{"p95", got.P95, 9.5},
		{"p99", got.P99, 9.9},
		{"p99.9", got.P999, 9.99},
		{"max", got.Max, 10},
		{"min", got.Min, 0.001},
		{"mean", got.Mean, 5.0005},
	} {
		// Three significant digits: within 0.1% (plus one unit).
		if math.Abs(tc.got-tc.want) > tc.want*0.001+0.001 {
			t.Errorf("%s = %v ms, want %v ms", tc.name, tc.got, tc.want)
		}
	}
	if got.Count != 10000 {
		t.Errorf("count = %d, want 10000", got.Count)
	}
	if empty := Summarize(newHist()); empty != (Latency{}) {
		t.Errorf("Summarize(empty) = %+v, want zero", empty)
	}
}

func TestLogBuckets(t *testing.T) {
	h := newHist()
	h.RecordValues(100, 10)  // 0.1 ms
	h.RecordValues(1000, 5)  // 1 ms
	h.RecordValues(50000, 1) // 50 ms
	bs := LogBuckets(h)
	var total int64
	for i, b := range bs {
		total += b.Count
		if b.From >= b.To {
			t.Errorf("bucket %d: from %v >= to %v", i, b.From, b.To)
		}
		if i > 0 && math.Abs(bs[i-1].To-b.From) > 1e-9 {
			t.Errorf("bucket %d starts at %v, previous ends at %v", i, b.From, bs[i-1].To)
		}
	}
	if total != 16 {
		t.Errorf("buckets hold %d values, want 16", total)
	}
	// 0.1 ms to 50 ms is about 2.7 decades: ~27 contiguous buckets.
	if len(bs) < 25 || len(bs) > 30 {
		t.Errorf("%d buckets, want about 27", len(bs))
	}
	for _, v := range []struct {
		ms    float64
		count int64
	}{{0.1, 10}, {1, 5}, {50, 1}} {
		found := false
		for _, b := range bs {
			if v.ms > b.From*0.999 && v.ms <= b.To*1.001 && b.Count == v.count {
				found = true
			}
		}
		if !found {
			t.Errorf("no bucket around %v ms with %d values: %+v", v.ms, v.count, bs)
		}
	}
	if LogBuckets(newHist()) != nil {
		t.Error("LogBuckets(empty) is not nil")
	}
}

func TestRecorder(t *testing.T) {
	r := NewRecorder()
	start := time.Now()
	r.Restart(start)
	for i := 0; i < 100; i++ {
		r.Record(i, time.Duration(i+1)*time.Millisecond)
	}
	r.Error(1, "timeout")
	r.Error(2, "timeout")
	r.Error(3, "http 503")
	p := r.Tick(start.Add(2*time.Second), 7)
	if p.Ops != 100 || p.Errors != 3 || p.Extra != 7 || p.At != 2 || p.Rate != 50 {
		t.Errorf("first point = %+v, want 100 ops, 3 errors, extra 7, at 2 s, 50/s", p)
	}
	if p.Max < 99.9 || p.Max > 100.1 || p.P50 < 49.9 || p.P50 > 50.1 {
		t.Errorf("first point percentiles = %+v", p)
	}
	r.Record(0, 5*time.Millisecond)
	p = r.Tick(start.Add(3*time.Second), 0)
	if p.Ops != 1 || p.Errors != 0 || p.Rate != 1 {
		t.Errorf("second point = %+v, want 1 op, no error", p)
	}
	if n := len(r.Timeline()); n != 2 {
		t.Errorf("timeline has %d points, want 2", n)
	}
	ops, errs := r.Count()
	if ops != 101 || errs != 3 {
		t.Errorf("Count() = %d, %d, want 101, 3", ops, errs)
	}
	if e := r.Errors(); e["timeout"] != 2 || e["http 503"] != 1 || len(e) != 2 {
		t.Errorf("Errors() = %v", e)
	}
	if got := r.Total().TotalCount(); got != 101 {
		t.Errorf("total count %d, want 101", got)
	}
	// Out-of-range values are clamped, not dropped.
	r.Record(0, time.Hour)
	r.Record(0, 0)
	if got := r.Total().TotalCount(); got != 103 {
		t.Errorf("total count after extremes %d, want 103", got)
	}
}

func TestProcCPU(t *testing.T) {
	if loadAvg() == 0 {
		t.Skip("no /proc/loadavg")
	}
	// Burn a little CPU so that the reading is positive.
	deadline := time.Now().Add(20 * time.Millisecond)
	for time.Now().Before(deadline) {
	}
	if got := ProcessCPU(os.Getpid()); got <= 0 {
		t.Errorf("ProcessCPU(self) = %v, want > 0", got)
	}
	if got := ProcessCPU(-5); got != -1 {
		t.Errorf("ProcessCPU(-5) = %v, want -1", got)
	}
}
