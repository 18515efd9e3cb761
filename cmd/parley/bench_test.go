package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/loadgen"
)

// benchRun runs `parley bench` with args against m and returns the JSON
// result and the printed summary.
func benchRun(t *testing.T, m *Main, args ...string) (*loadgen.Result, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "result.json")
	args = append([]string{"bench"}, append(args,
		"--url", "http://"+m.Addr(), "--json", path, "--progress", "off", "--setup-concurrency", "8")...)
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := run(ctx, args, &stdout, &stderr); err != nil {
		t.Fatalf("parley %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read result: %v", err)
	}
	var res loadgen.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("decode result: %v", err)
	}
	return &res, stdout.String()
}

// checkCommon checks what every result must have.
func checkCommon(t *testing.T, res *loadgen.Result, scn loadgen.Scenario, unit string) {
	t.Helper()
	if res.Scenario != scn || res.Target != loadgen.TargetParley || res.Unit != unit {
		t.Errorf("scenario %q target %q unit %q, want %q parley %q", res.Scenario, res.Target, res.Unit, scn, unit)
	}
	if res.Ops <= 0 || res.Throughput <= 0 || res.Elapsed <= 0 || res.SetupTime <= 0 {
		t.Errorf("ops %d, throughput %v, elapsed %v, setup %v: want all positive", res.Ops, res.Throughput, res.Elapsed, res.SetupTime)
	}
	if res.ErrorCount != 0 || res.ErrorRate != 0 {
		t.Errorf("errors against an in-process server: %v", res.Errors)
	}
	l := res.Latency
	if l.Count <= 0 || l.P50 <= 0 || l.P50 > l.P90 || l.P90 > l.P95 || l.P95 > l.P99 || l.P99 > l.P999 || l.P999 > l.Max {
		t.Errorf("latency %+v: want positive, ordered percentiles", l)
	}
	if len(res.Timeline) == 0 || len(res.Histogram) == 0 {
		t.Errorf("timeline of %d points, histogram of %d buckets: want both", len(res.Timeline), len(res.Histogram))
	}
	if res.Machine.CPUs <= 0 || res.Machine.Go == "" {
		t.Errorf("machine %+v", res.Machine)
	}
}

func TestBenchREST(t *testing.T) {
	// The server's default limit on each user's REST sends: set-up spreads
	// its posts over the members and waits out a 429 (history: 2 users
	// post 120 messages, more than their two bursts of 40).
	m := MustOpenMain(t, benchServer) // and the default --rest-send-rate
	for _, tc := range []struct {
		scn  loadgen.Scenario
		unit string
		args []string
	}{
		{loadgen.RoomList, "request", []string{"--users", "8", "--rooms", "3", "--history", "2"}},
		{loadgen.History, "request", []string{"--users", "2", "--history", "120", "--page", "50"}},
		{loadgen.Open, "open", []string{"--users", "4", "--rooms", "2", "--history", "3"}},
		{loadgen.Search, "search", []string{"--users", "4", "--rooms", "8", "--history", "10"}},
	} {
		t.Run(string(tc.scn), func(t *testing.T) {
			res, out := benchRun(t, m, append([]string{string(tc.scn), "--duration", "1s"}, tc.args...)...)
			checkCommon(t, res, tc.scn, tc.unit)
			if !strings.Contains(out, "throughput") || !strings.Contains(out, "p99.9") {
				t.Errorf("summary lacks the table:\n%s", out)
			}
		})
	}
}

// benchServer is how a server under load is started (docs/load-tests.md):
// the set-up signs up every user from one address.
func benchServer(c *Config) { c.SignupRate = 0 }

// TestBenchSignupLimit: against a server that limits sign-ups per address,
// set-up stops at the first refused sign-up and says which flag lifts it,
// instead of waiting out a limit no set-up can outlast.
func TestBenchSignupLimit(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.SignupRate, c.SignupBurst = 2, 3 })
	args := []string{"bench", "roomlist", "--users", "8", "--duration", "1s", "--url", "http://" + m.Addr(), "--progress", "off", "--setup-concurrency", "1"}
	var stdout, stderr bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	err := run(ctx, args, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--signup-rate 0") {
		t.Errorf("parley %s: %v, want an error naming --signup-rate 0", strings.Join(args, " "), err)
	}
	// The refused run spent none of the address's sign-ups: a person
	// signing up from it in a browser is not told "too many sign-ups".
	anon := newClient(t, m.Addr())
	for i := range 3 {
		if st := anon.do("POST", "/api/users", map[string]string{"name": "person" + strconv.Itoa(i), "password": "correct horse"}, nil); st != http.StatusCreated {
			t.Errorf("sign-up %d of the burst of 3 after the refused bench: %d, want 201", i+1, st)
		}
	}
}

func TestBenchSeats(t *testing.T) {
	m := MustOpenMain(t, benchServer)
	const users, seats, loops = 20, 6, 3
	res, out := benchRun(t, m, "seats", "--users", "20", "--seats", "6", "--loops", "3", "--duration", "10s")
	checkCommon(t, res, loadgen.Seats, "join")
	s := res.Seats
	if s == nil {
		t.Fatalf("no seats result:\n%s", out)
	}
	if s.Oversold != 0 {
		t.Errorf("oversold %d", s.Oversold)
	}
	if s.Rooms != loops || s.Capacity != seats {
		t.Errorf("rooms %d × %d seats, want %d × %d", s.Rooms, s.Capacity, loops, seats)
	}
	// The creator holds one seat of each room.
	if s.Joined != loops*(seats-1) || s.Full != loops*(users-seats+1) || s.MemberCount != loops*seats {
		t.Errorf("joined %d, full %d, members %d; want %d, %d, %d", s.Joined, s.Full, s.MemberCount,
			loops*(seats-1), loops*(users-seats+1), loops*seats)
	}
	if res.Ops != users*loops {
		t.Errorf("ops %d, want %d joins", res.Ops, users*loops)
	}
}

// gatewayUp skips the test when the node does not serve STOMP on /ws.
func gatewayUp(t *testing.T, m *Main) {
	t.Helper()
	resp, err := http.Get("http://" + m.Addr() + "/ws")
	if err != nil {
		t.Fatalf("probe /ws: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		t.Skip("no STOMP gateway on /ws yet")
	}
}

func TestBenchMessaging(t *testing.T) {
	m := MustOpenMain(t, benchServer)
	gatewayUp(t, m)
	for _, tc := range []struct {
		scn  loadgen.Scenario
		args []string
		subs int64
	}{
		{loadgen.Direct, []string{"--users", "6", "--loops", "5", "--ramp-up", "200ms"}, 2},
		{loadgen.Group, []string{"--users", "8", "--interval", "20ms-60ms"}, 8},
	} {
		t.Run(string(tc.scn), func(t *testing.T) {
			res, out := benchRun(t, m, append([]string{string(tc.scn), "--duration", "1s", "--drain", "5s"}, tc.args...)...)
			checkCommon(t, res, tc.scn, "delivery")
			msg := res.Messaging
			if msg == nil {
				t.Fatalf("no messaging result:\n%s", out)
			}
			if msg.Sent == 0 || msg.Accepted != msg.Sent || msg.Expected != msg.Accepted*tc.subs {
				t.Errorf("sent %d, accepted %d, expected %d: want all accepted, %d deliveries each", msg.Sent, msg.Accepted, msg.Expected, tc.subs)
			}
			if msg.Lost != 0 || msg.Received != msg.Expected || msg.Duplicates != 0 {
				t.Errorf("received %d of %d, lost %d, duplicates %d", msg.Received, msg.Expected, msg.Lost, msg.Duplicates)
			}
			if msg.Receipt.Count != msg.Accepted || msg.Deliveries <= 0 {
				t.Errorf("receipt latency count %d, deliveries/s %v", msg.Receipt.Count, msg.Deliveries)
			}
			if tc.scn == loadgen.Group && msg.PerMessage == nil && !strings.Contains(strings.Join(res.Notes, " "), "n.a.") {
				t.Errorf("group reports neither publishes per message nor n.a.")
			}
		})
	}
}

func TestBenchConnections(t *testing.T) {
	m := MustOpenMain(t, benchServer)
	gatewayUp(t, m)
	res, out := benchRun(t, m, "connections", "--users", "4", "--connections", "40", "--duration", "1s")
	checkCommon(t, res, loadgen.Connections, "connection")
	c := res.Connections
	if c == nil || c.Opened != 40 {
		t.Fatalf("connections result %+v, want 40 opened:\n%s", c, out)
	}
	if c.RSSBefore <= 0 || c.RSSAfter <= 0 {
		t.Errorf("RSS before %v after %v: want both read from /metrics", c.RSSBefore, c.RSSAfter)
	}
}

func TestBenchHTML(t *testing.T) {
	m := MustOpenMain(t, benchServer)
	path := filepath.Join(t.TempDir(), "report.html")
	res, _ := benchRun(t, m, "open", "--users", "2", "--rooms", "1", "--history", "1", "--loops", "1000000", "--duration", "2s", "--html", path)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The charts over time need two timeline points (one a second), so
	// the run is bounded by its duration, not by its loops (10,000 by
	// default, done in under a second on a fast machine). A machine
	// stalled long enough for the ticker to miss its seconds still leaves
	// one point, and the report then has the histogram alone.
	want := 3
	if len(res.Timeline) < 2 {
		want = 1
	}
	if n := strings.Count(string(data), "<svg"); n != want {
		t.Errorf("report has %d charts for %d timeline points, want %d", n, len(res.Timeline), want)
	}
}

func TestBenchFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no scenario", []string{"bench"}, "no scenario"},
		{"unknown", []string{"bench", "nope"}, "unknown scenario"},
		{"bad interval", []string{"bench", "group", "--interval", "3s-1s"}, "MIN <= MAX"},
		{"zero loops", []string{"bench", "open", "--loops", "0"}, "bounded"},
		{"rabbit roomlist", []string{"bench", "roomlist", "--target", "rabbitmq-web-stomp"}, "only against parley"},
		{"bad url", []string{"bench", "open", "--url", "ftp://127.0.0.1:21"}, "want http"},
		{"bad progress", []string{"bench", "open", "--progress", "maybe"}, "--progress"},
		{"flag of another scenario", []string{"bench", "seats", "--interval", "1s"}, "--interval does not apply to seats"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(ctx, tc.args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want an error with %q", tc.args, err, tc.want)
			}
		})
	}
}

func TestBenchFlagsFromEnv(t *testing.T) {
	// A flag given in the environment is used; the URL is unreachable, so
	// the run fails in set-up, naming it.
	t.Setenv("PARLEY_URL", "http://127.0.0.1:1")
	t.Setenv("PARLEY_TIMEOUT", "2s")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"bench", "open", "--users", "1", "--progress", "off"}, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("bench with PARLEY_URL: %v, want a failure to reach 127.0.0.1:1", err)
	}
}

func TestParseInterval(t *testing.T) {
	for _, tc := range []struct {
		in     string
		lo, hi time.Duration
		ok     bool
	}{
		{"1s-3s", time.Second, 3 * time.Second, true},
		{"250ms", 250 * time.Millisecond, 250 * time.Millisecond, true},
		{"0s", 0, 0, true},
		{"3s-1s", 0, 0, false},
		{"fast", 0, 0, false},
	} {
		lo, hi, err := parseInterval(tc.in)
		if (err == nil) != tc.ok || lo != tc.lo || hi != tc.hi {
			t.Errorf("parseInterval(%q) = %v, %v, %v; want %v, %v, ok %v", tc.in, lo, hi, err, tc.lo, tc.hi, tc.ok)
		}
	}
}

// TestBenchScenarioFlags: a scenario's -h lists only its own flags, and a
// flag of another scenario is refused, naming the scenarios it belongs to
// (seats listed and took group's --events, --typing, --read-after-send).
func TestBenchScenarioFlags(t *testing.T) {
	ctx := context.Background()
	groupOnly := []string{"--events", "--typing", "--read-after-send"}
	help := func(scn string) string {
		var stdout, stderr bytes.Buffer
		if err := run(ctx, []string{"bench", scn, "-h"}, &stdout, &stderr); err == nil {
			t.Errorf("bench %s -h: no error, want flag.ErrHelp", scn)
		}
		return stderr.String()
	}
	seats, group := help("seats"), help("group")
	for _, f := range groupOnly {
		if strings.Contains(seats, f+" ") || strings.Contains(seats, f+"\n") {
			t.Errorf("bench seats -h lists %s, a flag of group only:\n%s", f, seats)
		}
		if !strings.Contains(group, f) {
			t.Errorf("bench group -h does not list %s:\n%s", f, group)
		}
	}
	for _, args := range [][]string{
		{"bench", "seats", "--typing", "1s"},
		{"bench", "seats", "--events"},
		{"bench", "seats", "--read-after-send=true"},
	} {
		var stdout, stderr bytes.Buffer
		err := run(ctx, append(args, "--url", "http://127.0.0.1:1", "--progress", "off"), &stdout, &stderr)
		name := strings.SplitN(strings.TrimLeft(args[2], "-"), "=", 2)[0]
		want := "--" + name + " does not apply to seats (it is a flag of group)"
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("run(%q) = %v, want an error with %q", args, err, want)
		}
	}
}
