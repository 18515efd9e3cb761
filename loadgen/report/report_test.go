package report

import (
	"bytes"
	"encoding/json"
	"fmt"
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
	if n := strings.Count(out, "<svg"); n != 4 {
		t.Errorf("%d charts, want 4 (throughput, messages sent, latency over time, histogram)", n)
	}
	for _, want := range []string{"Throughput over time", "Messages sent over time", "Latency percentiles over time", "Latency histogram", `class="series"`, `class="bar"`, "<title>p99</title>"} {
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

// TestWriteTextOnce: each figure is said once (no "deliveries" thrice, no
// "joins" twice), counts agree with their nouns, and memory is in GiB.
func TestWriteTextOnce(t *testing.T) {
	res := sampleResult()
	res.Machine.Memory = "16318436 kB"
	var b bytes.Buffer
	WriteText(&b, res)
	out := b.String()
	label := regexp.MustCompile(`(?m)^  (\S[^ ]*(?: [^ ]+)?)\s{2,}`)
	seen := map[string]int{}
	for _, m := range label.FindAllStringSubmatch(out, -1) {
		seen[strings.Fields(m[1])[0]]++
	}
	if seen["deliveries"] > 1 || seen["deliveries/s"] > 0 {
		t.Errorf("deliveries said %d times, deliveries/s %d times:\n%s", seen["deliveries"], seen["deliveries/s"], out)
	}
	if !strings.Contains(out, "15.6 GiB") || strings.Contains(out, "kB") {
		t.Errorf("memory not in GiB:\n%s", out)
	}

	res = sampleResult()
	res.Scenario, res.Unit, res.Messaging = loadgen.Seats, "join", nil
	res.Shape = loadgen.Shape{Users: 1, Loops: 1, Duration: 60, Seats: 1}
	res.Seats = &loadgen.SeatsResult{Rooms: 1, Capacity: 1, Joined: 0, Full: 1}
	b.Reset()
	WriteText(&b, res)
	out = b.String()
	if n := regexp.MustCompile(`(?m)^  joins`).FindAllString(out, -1); len(n) != 1 {
		t.Errorf("joins said %d times:\n%s", len(n), out)
	}
	for _, bad := range []string{"1 users", "1 loops", "1 seats per room"} {
		if strings.Contains(out, bad) {
			t.Errorf("summary says %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"1 user,", "≤ 1 loop,", "1 seat per room"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

// TestWriteHTMLBurst: a run too short for charts over time (seats takes a
// few hundredths of a second) gets the histogram and the join outcome,
// not empty boxes.
func TestWriteHTMLBurst(t *testing.T) {
	res := sampleResult()
	res.Scenario, res.Unit, res.Messaging = loadgen.Seats, "join", nil
	res.Timeline = res.Timeline[:1]
	res.Seats = &loadgen.SeatsResult{Rooms: 2, Capacity: 5, Joined: 8, Full: 12}
	var b bytes.Buffer
	if err := WriteHTML(&b, res); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "over time") || strings.Count(out, "<svg") != 2 {
		t.Errorf("burst report: %d charts, over time %v; want the histogram and the join outcome only", strings.Count(out, "<svg"), strings.Contains(out, "over time"))
	}
	for _, want := range []string{"Join outcome", "joined (201): 8", "refused room_full (409): 12", "oversold: 0"} {
		if !strings.Contains(out, want) {
			t.Errorf("burst report lacks %q", want)
		}
	}
}

// TestLogTicks: a log axis over one or two decades labels 1, 2 and 5 of
// each, not only the powers of ten.
func TestLogTicks(t *testing.T) {
	got := fmt.Sprint(logTicks(0, 1))
	if got != "[1 2 5 10]" {
		t.Errorf("logTicks(0, 1) = %s, want [1 2 5 10]", got)
	}
	if got := len(logTicks(-3, 3)); got != 7 {
		t.Errorf("logTicks(-3, 3): %d ticks, want the 7 powers of ten", got)
	}
}

// TestLatencySamplesExplained: the latency row says what its count is
// and, for messaging, why it is fewer than the deliveries ("n=1767" of
// 1,860 deliveries was unexplained: a sender's own copy is not timed).
func TestLatencySamplesExplained(t *testing.T) {
	res := sampleResult()
	res.Ops, res.Messaging.Received = 1075, 1075 // 1000 timed, 75 copies to their senders
	var b bytes.Buffer
	if err := WriteText(&b, res); err != nil {
		t.Fatal(err)
	}
	want := "1000 latency samples of 1075 deliveries (a sender's copy of its own message is not timed)"
	if !strings.Contains(b.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.String())
	}
}

// TestHTMLTitleOnce: the report names its run once, in its heading; the
// summary under it does not say it again ("parley bench group — parley"
// above "group against parley (...)").
func TestHTMLTitleOnce(t *testing.T) {
	var b bytes.Buffer
	if err := WriteHTML(&b, sampleResult()); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	h1 := regexp.MustCompile(`<h1>([^<]*)</h1>`).FindStringSubmatch(out)
	if h1 == nil || !strings.Contains(h1[1], "group against parley") {
		t.Fatalf("heading %q, want the run's scenario against its target", h1)
	}
	if n := strings.Count(out, "group against parley"); n != 2 { // <title> and <h1>
		t.Errorf("the run is named %d times, want twice (title and heading):\n%s", n, out)
	}
}
