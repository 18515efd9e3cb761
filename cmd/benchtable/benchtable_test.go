package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

func TestMedian(t *testing.T) {
	for _, c := range []struct {
		in          []float64
		med, lo, hi float64
	}{
		{[]float64{3}, 3, 3, 3},
		{[]float64{5, 1, 3}, 3, 1, 5},
		{[]float64{4, 1, 3, 2}, 2.5, 1, 4},
		{[]float64{1.29, 0.95, 1.07, 2.0, 0.8}, 1.07, 0.8, 2.0},
	} {
		in := append([]float64(nil), c.in...)
		med, lo, hi := median(c.in)
		if med != c.med || lo != c.lo || hi != c.hi {
			t.Errorf("median(%v) = %v, %v, %v; want %v, %v, %v", in, med, lo, hi, c.med, c.lo, c.hi)
		}
		for i := range in {
			if in[i] != c.in[i] {
				t.Errorf("median reordered its input: %v", c.in)
			}
		}
	}
}

func TestParseRounds(t *testing.T) {
	rounds, err := parseRounds(strings.NewReader("# round parley centrifugo\n1 24.13 18.69\n\n2 20 20 # even\n"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rounds) != 2 || rounds[0].Round != 1 || rounds[0].A != 24.13 || rounds[1].Ratio != 1 {
		t.Errorf("rounds = %+v", rounds)
	}
	for in, want := range map[string]string{
		"":               "no rounds",
		"1 2\n":          "three fields",
		"x 1 2\n":        "whole number",
		"1 abc 2\n":      "not a number",
		"1 2 0\n":        "undefined",
		"1 NaN 2\n":      "not a number",
		"1 2 3\n2 - 3\n": "did the run of round 2 fail",
	} {
		if _, err := parseRounds(strings.NewReader(in)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("parseRounds(%q) = %v, want an error with %q", in, err, want)
		}
	}
}

// TestSummary runs the summary subcommand on a rounds file: the human
// lines, the JSON line, and the file it writes.
func TestSummary(t *testing.T) {
	now = func() time.Time { return time.Date(2026, 12, 7, 1, 2, 3, 0, time.UTC) }
	t.Cleanup(func() { now = func() time.Time { return time.Now().UTC() } })
	dir := t.TempDir()
	rf := filepath.Join(dir, "rounds.txt")
	if err := os.WriteFile(rf, []byte("1 20 10\n2 30 10\n3 10 10\n4 15 10\n5 50 10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	err := run([]string{"summary", "-name", "x-p99", "-title", "fan-out", "-metric", "p99 (ms)", "-a", "Parley", "-b", "Peer",
		"-goal", "≤ 1.00", "-commit", "abc1234", "-command", "ROUNDS=5 scripts/x.sh && echo <done>", "-out", dir, rf}, &out, &errOut)
	if err != nil {
		t.Fatalf("%v (%s)", err, errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if want := "== x-p99: fan-out, p99 (ms), Parley / Peer: median 2.00 (1.00-5.00) over 5 rounds, goal ≤ 1.00"; lines[0] != want {
		t.Errorf("headline %q, want %q", lines[0], want)
	}
	if want := "   round 2: Parley 30, Peer 10, ratio 3.00"; lines[2] != want {
		t.Errorf("round line %q, want %q", lines[2], want)
	}
	saved, err := os.ReadFile(filepath.Join(dir, "x-p99.summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	if last := lines[len(lines)-1]; last+"\n" != string(saved) {
		t.Errorf("last line printed %q, file %q: want the same JSON line", last, saved)
	}
	if !strings.Contains(string(saved), `"command":"ROUNDS=5 scripts/x.sh && echo <done>"`) {
		t.Errorf("saved %s: want the command as given, & and < unescaped", saved)
	}
	var s Summary
	if err := json.Unmarshal(saved, &s); err != nil {
		t.Fatal(err)
	}
	if s.Median != 2 || s.Min != 1 || s.Max != 5 || len(s.Rounds) != 5 || s.Date != "2026-12-07T01:02:03Z" || s.Commit != "abc1234" || s.Quick {
		t.Errorf("saved summary %+v", s)
	}

	if err := run([]string{"summary", "-name", "Bad Name", "-title", "t", "-metric", "m", "-a", "a", "-b", "b", "-out", dir, rf}, &out, &errOut); err == nil {
		t.Error("a name with a space and capitals was taken")
	}
}

// TestTableRewrite renders the fixture summaries into the fixture
// document: the markers and everything outside them stay as they were,
// the rows are the newest summary of each name in name order, the quick
// one left out, and a second rewrite changes nothing.
func TestTableRewrite(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	in, err := os.ReadFile("testdata/doc.md")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(doc, in, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run([]string{"table", "-results", "testdata/results", "-file", doc}, &out, &errOut); err != nil {
		t.Fatalf("%v (%s)", err, errOut.String())
	}
	if !strings.Contains(errOut.String(), "left out 1 summaries of quick runs") {
		t.Errorf("stderr %q: want the quick summary counted", errOut.String())
	}
	if strings.Contains(errOut.String(), "lines now") {
		t.Errorf("stderr %q: a short file warned of its length", errOut.String())
	}
	got, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/doc.golden.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Errorf("rewritten file:\n%s\nwant (testdata/doc.golden.md):\n%s", got, want)
	}
	// Outside the markers, byte for byte the input.
	cut := func(b []byte) (string, string) {
		s := string(b)
		i := strings.Index(s, beginMarker+"\n") + len(beginMarker) + 1
		j := strings.Index(s, endMarker)
		return s[:i], s[j:]
	}
	inHead, inTail := cut(in)
	gotHead, gotTail := cut(got)
	if inHead != gotHead || inTail != gotTail {
		t.Errorf("the text outside the markers changed")
	}
	if err := run([]string{"table", "-results", "testdata/results", "-file", doc}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if again, _ := os.ReadFile(doc); string(again) != string(got) {
		t.Errorf("a second rewrite changed the file")
	}

	out.Reset()
	if err := run([]string{"table", "-results", "testdata/results", "-quick", "-file", "-"}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "| REST room list (QUICK: not a measurement) |") {
		t.Errorf("-quick table lacks the quick row:\n%s", out.String())
	}
}

func TestTableEmpty(t *testing.T) {
	if got := renderTable(nil); !strings.Contains(got, "| no pinned run yet |") {
		t.Errorf("empty table %q: want a row saying there is no run yet", got)
	}
}

// TestTableUnpinned: a PIN=0 run's row says so.
func TestTableUnpinned(t *testing.T) {
	s := Summary{Name: "x", Title: "t", Metric: "m", A: "a", B: "b", Median: 1, Min: 1, Max: 1,
		Rounds: []Round{{Round: 1, A: 1, B: 1, Ratio: 1}}, Pinned: "not pinned (PIN=0)", Command: "PIN=0 scripts/x.sh"}
	if got := renderTable([]Summary{s}); !strings.Contains(got, "| t (not pinned) | m, a / b | **1.00** | 1.00-1.00 (1.00) | 1 |") {
		t.Errorf("table %q: want the row marked not pinned", got)
	}
}

func TestReplaceBetweenRefuses(t *testing.T) {
	for doc, want := range map[string]string{
		"no markers\n":                                      "no <!-- headline:begin -->",
		beginMarker + "\n":                                  "no <!-- headline:begin -->",
		endMarker + "\n" + beginMarker + "\n":               "comes before",
		beginMarker + "\n" + beginMarker + "\n" + endMarker: "appears twice",
		beginMarker + "\n" + endMarker + "\n" + endMarker:   "appears twice",
	} {
		if _, err := replaceBetween([]byte(doc), "| t |\n"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("replaceBetween(%q) = %v, want an error with %q", doc, err, want)
		}
	}
	got, err := replaceBetween([]byte("a\n  "+beginMarker+"\n"+endMarker+"\nb"), "| t |\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "a\n  " + beginMarker + "\n| t |\n" + endMarker + "\nb"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestTableWarnsLong: a rewrite that leaves the file over 250 lines says
// so (and still writes it).
func TestTableWarnsLong(t *testing.T) {
	doc := filepath.Join(t.TempDir(), "BENCHMARKS.md")
	long := strings.Repeat("a line\n", maxLines) + beginMarker + "\n" + endMarker + "\n"
	if err := os.WriteFile(doc, []byte(long), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	if err := run([]string{"table", "-results", "testdata/results", "-file", doc}, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(errOut.String(), "lines now, over its 250: move") {
		t.Errorf("stderr %q: want the length warned of", errOut.String())
	}
}

// TestQuantile: a histogram's quantile is its bucket's upper bound (the
// last finite one past it), the buckets summed over their other labels;
// "-" without observations.
func TestQuantile(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-metric", "parley_store_fsync_seconds"}, "51.2"},                        // 0.99 × 69 = 68.3: the 69th
		{[]string{"-metric", "parley_store_fsync_seconds", "-q", "0.5"}, "0.4"},            // 34.5: within 0.4 ms
		{[]string{"-metric", "parley_other_seconds", "-q", "0.8", "-scale", "1"}, "0.001"}, // 4 of 5 by 1 ms
		{[]string{"-metric", "parley_other_seconds", "-q", "0.9", "-scale", "1"}, "0.001"}, // past the last bound: that bound
		{[]string{"-metric", "parley_empty_seconds"}, "-"},
		{[]string{"-metric", "parley_missing_seconds"}, "-"},
	} {
		var out, errOut bytes.Buffer
		if err := run(append(append([]string{"quantile"}, c.args...), "testdata/fsync.metrics"), &out, &errOut); err != nil {
			t.Errorf("%v: %v (%s)", c.args, err, errOut.String())
			continue
		}
		if got := strings.TrimSpace(out.String()); got != c.want {
			t.Errorf("%v: %q, want %q", c.args, got, c.want)
		}
	}
	var out, errOut bytes.Buffer
	if err := run([]string{"quantile", "-metric", "x", "-q", "0", "testdata/fsync.metrics"}, &out, &errOut); err == nil {
		t.Error("-q 0 was taken")
	}
}

// TestRoundsLib sources scripts/lib/rounds.sh, the shell half of the
// scripts' rules: its defaults, the alternating order, the rerun command
// and a bad ROUNDS refused.
func TestRoundsLib(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	lib, err := filepath.Abs("../../scripts/lib/rounds.sh")
	if err != nil {
		t.Fatal(err)
	}
	script := `set -euo pipefail; source "$LIB"
echo "rounds=$rounds quick=$quick pinned=$pinned server=${server_cpu[*]:-} load=${load_cpu[*]:-}"
rounds_order 1 parley peer; rounds_order 2 parley peer; rounds_order 5 parley peer
rounds_command scripts/x.sh ROUNDS=5 RATES="8 16" EMPTY=`
	sh := func(env ...string) (string, error) {
		cmd := exec.Command(bash, "-c", script)
		cmd.Env = append([]string{"LIB=" + lib, "PATH=" + os.Getenv("PATH")}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	got, err := sh("PIN=0")
	if err != nil {
		t.Fatalf("%v: %s", err, got)
	}
	want := `rounds=5 quick=0 pinned=not pinned (PIN=0) server= load=
parley peer
peer parley
parley peer
PIN=0 ROUNDS=5 RATES=8\ 16 EMPTY='' scripts/x.sh
`
	if got != want {
		t.Errorf("PIN=0:\n%s\nwant:\n%s", got, want)
	}

	got, err = sh("PIN=0", "QUICK=1")
	if err != nil || !strings.HasPrefix(got, "rounds=1 quick=1 ") || !strings.Contains(got, "PIN=0 QUICK=1 ROUNDS=5") {
		t.Errorf("QUICK=1: %v:\n%s", err, got)
	}

	if runtime.NumCPU() >= 2 {
		got, err = sh("SERVER_CPU=1", "LOAD_CPU=0")
		if err != nil || !strings.Contains(got, "pinned=server on core 1, load generator on core 0 server=taskset -c 1 load=taskset -c 0") {
			t.Errorf("pinned: %v:\n%s", err, got)
		}
	}

	got, err = sh("PIN=0", "ROUNDS=zero")
	if err == nil || !strings.Contains(got, "ROUNDS=zero: give a whole number of rounds") {
		t.Errorf("ROUNDS=zero: %v:\n%s", err, got)
	}
}
