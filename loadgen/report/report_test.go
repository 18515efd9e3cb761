package report

import (
	"bytes"
	"encoding/json"
	"parley/loadgen"
	"regexp"
	"strings"
	"testing"
	"time"
)

// sampleResult is a result as a group run would make it.
func sampleResult() *loadgen.Result {
	r := loadgen.NewRecorder()
	start := time.Now()
	r.Restart(start)
	for s := 1; s <= 5; s++ {
		for i := 0; i < 200; i++ {
			r.Record(i, time.Duration(100+i*s)*time.Microsecond)
		}
		if s == 3 {
			r.Error(0, "STOMP ERROR: slow consumer")
		}
		r.Tick(start.Add(time.Duration(s)*time.Second), 40)
	}
	total := r.Total()
	per := 0.004
	return &loadgen.Result{
		Scenario: loadgen.Group, Target: loadgen.TargetParley, URLs: []string{"http://127.0.0.1:8080"},
		Started: start.UTC(), Machine: loadgen.Machine{CPUs: 2}, Shape: loadgen.Shape{Users: 250, Loops: 100, Duration: 5, MinInterval: 1, MaxInterval: 3, Payload: 100},
		SetupTime: 3.2, Elapsed: 5, Unit: "delivery", Ops: 1000, Throughput: 200,
		Latency: loadgen.Summarize(total), Errors: r.Errors(), ErrorCount: 1, ErrorRate: 1.0 / 1001,
		Messaging: &loadgen.MessagingResult{Sent: 200, Accepted: 200, Expected: 1000, Received: 1000, PerMessage: &per},
		Timeline:  r.Timeline(), Histogram: loadgen.LogBuckets(total),
	}
}

func TestWriteText(t *testing.T) {
	var b bytes.Buffer
	if err := WriteText(&b, sampleResult()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	for _, want := range []string{"group against parley", "throughput", "p99", "p99.9", "deliveries/s", "lost 0", "publishes/msg", "0.00", "STOMP ERROR: slow consumer", "machine"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	in := sampleResult()
	if err := WriteJSON(&b, in); err != nil {
		t.Fatal(err)
	}
	var out loadgen.Result
	if err := json.Unmarshal(b.Bytes(), &out); err != nil {
		t.Fatalf("decode: %v", err)
	}
	if out.Latency != in.Latency || out.Messaging.Received != 1000 || len(out.Timeline) != 5 || *out.Messaging.PerMessage != 0.004 {
		t.Errorf("round trip lost data: %+v", out)
	}
	for _, key := range []string{`"p99_9_ms"`, `"deliveries_per_s"`, `"error_rate"`, `"timeline"`, `"histogram"`} {
		if !bytes.Contains(b.Bytes(), []byte(key)) {
			t.Errorf("JSON lacks %s", key)
		}
	}
}

func TestWriteHTML(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, sampleResult()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if n := strings.Count(out, "<svg"); n != 3 {
		t.Errorf("%d charts, want 3 (throughput, latency over time, histogram)", n)
	}
	for _, want := range []string{"Throughput over time", "Latency percentiles over time", "Latency histogram", `class="series"`, `class="bar"`, "<title>p99</title>"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	// Self-contained: nothing is loaded from anywhere. The target URL may
	// appear as text, never as a resource.
	external := regexp.MustCompile(`(?i)(src|href|xlink:href|action)\s*=|url\s*\(|@import|<script|<link|<iframe|<img`)
	if m := external.FindString(out); m != "" {
		t.Errorf("report references an external resource: %q", m)
	}
}

func TestWriteHTMLEmpty(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, &loadgen.Result{Scenario: loadgen.Open, Target: loadgen.TargetParley, Unit: "open"}); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(b.String(), "no data"); n != 3 {
		t.Errorf("empty report: %d 'no data' charts, want 3", n)
	}
}

func TestNiceStep(t *testing.T) {
	for _, tc := range []struct{ in, want float64 }{{0.7, 1}, {1.5, 2}, {3, 5}, {7, 10}, {120, 200}, {0, 1}} {
		if got := niceStep(tc.in); got != tc.want {
			t.Errorf("niceStep(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
}
