package loadgen

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestMessagingAgainstFakeBroker runs direct and group against a
// Web-STOMP-like broker and checks the accounting: every receipted
// message reaches every subscriber, nothing is lost or duplicated.
func TestMessagingAgainstFakeBroker(t *testing.T) {
	for _, tc := range []struct {
		name     string
		scn      Scenario
		coalesce bool
		opts     Options
	}{
		{"direct", Direct, false, Options{Users: 6, Loops: 5}},
		{"direct/coalesced", Direct, true, Options{Users: 4, Loops: 5, Payload: 33}},
		{"group", Group, false, Options{Users: 5, Loops: 4, MinInterval: 10 * time.Millisecond, MaxInterval: 30 * time.Millisecond}},
		{"group/coalesced", Group, true, Options{Users: 5, Loops: 4, MinInterval: 5 * time.Millisecond, MaxInterval: 5 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, url := newFakeBroker(t, tc.coalesce)
			b.ping = true
			o := tc.opts
			o.Target, o.URLs = TargetRabbitMQ, []string{url}
			o.Duration, o.Drain = 5*time.Second, 5*time.Second
			res, err := Run(context.Background(), tc.scn, o)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			m := res.Messaging
			if m == nil {
				t.Fatal("no messaging result")
			}
			wantSent := int64(o.Users * o.Loops)
			subs := int64(o.Users)
			if tc.scn == Direct {
				subs = 2
			}
			if m.Sent != wantSent || m.Accepted != wantSent {
				t.Errorf("sent %d, accepted %d, want %d", m.Sent, m.Accepted, wantSent)
			}
			if m.Expected != wantSent*subs || m.Received != m.Expected || m.Lost != 0 || m.Duplicates != 0 {
				t.Errorf("expected %d received %d lost %d dup %d, want %d all received", m.Expected, m.Received, m.Lost, m.Duplicates, wantSent*subs)
			}
			// Latency counts deliveries to others than the sender.
			if want := wantSent * (subs - 1); res.Latency.Count != want {
				t.Errorf("latency count %d, want %d", res.Latency.Count, want)
			}
			if res.ErrorCount != 0 {
				t.Errorf("errors: %v", res.Errors)
			}
			if res.Unit != "delivery" || res.Ops != m.Received || res.Throughput <= 0 || m.Receipt.Count != wantSent {
				t.Errorf("unit %q ops %d throughput %v receipts %d", res.Unit, res.Ops, res.Throughput, m.Receipt.Count)
			}
			if res.Latency.P50 > res.Latency.P99 || res.Latency.P99 > res.Latency.Max {
				t.Errorf("percentiles out of order: %+v", res.Latency)
			}
		})
	}
}

func TestMessagingBadCredentials(t *testing.T) {
	_, url := newFakeBroker(t, false)
	_, err := Run(context.Background(), Group, Options{
		Target: TargetRabbitMQ, URLs: []string{url}, Users: 2, Loops: 1,
		Login: "guest", Passcode: "wrong", Duration: time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "bad credentials: try again") {
		t.Errorf("Run with a wrong passcode: err %v, want the unescaped \"bad credentials: try again\"", err)
	}
}

func TestValidate(t *testing.T) {
	for _, tc := range []struct {
		name string
		scn  Scenario
		o    Options
		want string
	}{
		{"no url", RoomList, Options{}, "no target URL"},
		{"bad scheme", RoomList, Options{URLs: []string{"ftp://x"}}, "want http"},
		{"ws for parley", RoomList, Options{URLs: []string{"ws://127.0.0.1:1/ws"}}, "want http"},
		{"rabbit roomlist", RoomList, Options{Target: TargetRabbitMQ, URLs: []string{"ws://127.0.0.1:1/ws"}}, "only against parley"},
		{"http for rabbit", Group, Options{Target: TargetRabbitMQ, URLs: []string{"http://127.0.0.1:1"}}, "want ws"},
		{"odd direct", Direct, Options{URLs: []string{"http://127.0.0.1:1"}, Users: 3}, "even"},
		{"unknown", Scenario("nope"), Options{URLs: []string{"http://127.0.0.1:1"}}, "unknown scenario"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(context.Background(), tc.scn, tc.o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Run(%s, %+v) = %v, want error containing %q", tc.scn, tc.o, err, tc.want)
			}
		})
	}
}

func TestParseField(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64
		rest string
	}{
		{"123:4:5:xx", 123, "4:5:xx"},
		{":1", -1, "1"},
		{"12", -1, ""},
		{"1a:", -1, ""},
	} {
		got, rest := parseField([]byte(tc.in))
		if got != tc.want || string(rest) != tc.rest {
			t.Errorf("parseField(%q) = %d, %q, want %d, %q", tc.in, got, rest, tc.want, tc.rest)
		}
	}
}
