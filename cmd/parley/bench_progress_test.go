package main

import (
	"bytes"
	"context"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestBenchProgress runs a scenario with several set-up steps with the
// progress bar on: each step has a label of its own, so no label's bar
// goes backwards or comes back after another, and a run that --duration
// bounds counts the measurement against time, not users × loops.
func TestBenchProgress(t *testing.T) {
	m := MustOpenMain(t, benchServer)
	// loops so many that --duration, not the count, ends the run on any
	// machine (with the default 10,000 a fast build finished the count
	// first, and then the bar rightly showed it).
	const loops = 10_000_000
	args := []string{"bench", "history", "--url", "http://" + m.Addr(), "--users", "3", "--history", "150",
		"--duration", "1500ms", "--loops", strconv.Itoa(loops), "--progress", "on", "--setup-concurrency", "4"}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("parley %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	line := regexp.MustCompile(`^(\S+)\s+\[[= ]*\]\s+(\d+)%`)
	var labels []string
	last := map[string]int{}
	measureLines := 0
	for _, l := range strings.Split(stderr.String(), "\r\033[K") {
		mm := line.FindStringSubmatch(l)
		if mm == nil {
			continue
		}
		label, pct := mm[1], mm[2]
		p, _ := strconv.Atoi(pct)
		if len(labels) == 0 || labels[len(labels)-1] != label {
			for _, seen := range labels {
				if seen == label {
					t.Errorf("label %q comes back after %v: two steps share it", label, labels)
				}
			}
			labels = append(labels, label)
		} else if p < last[label] {
			t.Errorf("%s went back from %d%% to %d%%: %q", label, last[label], p, l)
		}
		last[label] = p
		if label == "measure" {
			measureLines++
			if strings.Contains(l, "/"+strconv.Itoa(3*loops)) {
				t.Errorf("a --duration run counts against users × the loop cap: %q", l)
			}
		}
	}
	if len(labels) < 2 || measureLines == 0 {
		t.Errorf("labels %v, %d measure lines: want set-up steps and the measurement\n%q", labels, measureLines, stderr.String())
	}
}

// TestBenchSaysSendRateSlowsSetUp: a set-up that waits on the server's
// --rest-send-rate says so, in the summary (and on the progress line).
func TestBenchSaysSendRateSlowsSetUp(t *testing.T) {
	m := MustOpenMain(t, benchServer, func(c *Config) { c.RestSendRate = 5 })
	res, out := benchRun(t, m, "history", "--users", "2", "--history", "30", "--duration", "300ms")
	found := false
	for _, n := range res.Notes {
		found = found || strings.Contains(n, "--rest-send-rate 0")
	}
	if !found || !strings.Contains(out, "--rest-send-rate") {
		t.Errorf("notes %q; summary:\n%s\nwant a note that the server's --rest-send-rate slowed the set-up", res.Notes, out)
	}
}

// TestBenchProgressUnits: each number on the progress line says what it
// counts. A messaging run's measure line read "92 done 190/s" (messages
// sent beside deliveries a second) and its drain line "of 10s, 0 done".
func TestBenchProgressUnits(t *testing.T) {
	m := MustOpenMain(t, benchServer)
	gatewayUp(t, m)
	args := []string{"bench", "group", "--url", "http://" + m.Addr(), "--users", "4", "--interval", "50ms",
		"--duration", "1500ms", "--drain", "5s", "--progress", "on", "--setup-concurrency", "4"}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("parley %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	measure := regexp.MustCompile(`\d+ sent, \d+ deliveries/s `)
	drain := regexp.MustCompile(`of at most 5s, \d+ of \d+ deliveries in`)
	seen := map[string]int{}
	for _, l := range strings.Split(stderr.String(), "\r\033[K") {
		phase, _, _ := strings.Cut(l, " ")
		switch {
		case strings.Contains(l, " done"):
			t.Errorf("%s line says \"done\" without saying what: %q", phase, l)
		case phase == "measure" && !measure.MatchString(l):
			t.Errorf("measure line %q, want %q", l, measure)
		case phase == "drain" && !drain.MatchString(l):
			t.Errorf("drain line %q, want %q", l, drain)
		}
		seen[phase]++
	}
	if seen["measure"] == 0 || seen["drain"] == 0 {
		t.Errorf("phases seen %v, want measure and drain lines\n%q", seen, stderr.String())
	}
}
