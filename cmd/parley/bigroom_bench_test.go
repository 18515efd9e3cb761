package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"parley/loadgen"
)

// TestBenchBigRoom runs bigroom against a real node: a few members send,
// every member receives every message, the accounts open several
// sessions each, and the node's memory is read from /metrics.
func TestBenchBigRoom(t *testing.T) {
	m := MustOpenMain(t, benchServer)
	gatewayUp(t, m)
	res, out := benchRun(t, m, "bigroom", "--users", "12", "--senders", "3", "--sessions-per-user", "4",
		"--interval", "100ms", "--duration", "1500ms", "--drain", "5s", "--late", "10m")
	checkCommon(t, res, loadgen.BigRoom, "delivery")
	msg, b := res.Messaging, res.BigRoom
	if msg == nil || b == nil {
		t.Fatalf("messaging %v, bigroom %v: want both:\n%s", msg, b, out)
	}
	if b.Members != 12 || b.Accounts != 3 || b.Senders != 3 {
		t.Errorf("members %d, accounts %d, senders %d: want 12 sessions of 3 users, 3 sending", b.Members, b.Accounts, b.Senders)
	}
	if msg.Sent == 0 || msg.Accepted != msg.Sent || msg.Expected != msg.Accepted*12 {
		t.Errorf("sent %d, accepted %d, expected %d: want all accepted, 12 deliveries each", msg.Sent, msg.Accepted, msg.Expected)
	}
	if msg.Lost != 0 || msg.Received != msg.Expected || msg.Duplicates != 0 {
		t.Errorf("received %d of %d, lost %d, duplicates %d", msg.Received, msg.Expected, msg.Lost, msg.Duplicates)
	}
	if b.Late != 0 {
		t.Errorf("%d late deliveries with --late 10m", b.Late)
	}
	if b.RSSConnected <= 0 || b.RSSPeak < b.RSSEnd || b.RSSEnd <= 0 {
		t.Errorf("RSS connected %v, peak %v, end %v: want all read, peak ≥ end", b.RSSConnected, b.RSSPeak, b.RSSEnd)
	}
	for _, want := range []string{"late", "server RSS", "3 senders", "4 sessions per user"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchCentrifugoFlags(t *testing.T) {
	var stdout, stderr bytes.Buffer
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"centrifugo roomlist", []string{"bench", "roomlist", "--target", "centrifugo"}, "--target does not apply to roomlist"},
		{"centrifugo without secret", []string{"bench", "group", "--target", "centrifugo"}, "--centrifugo-secret"},
		{"senders of group", []string{"bench", "group", "--senders", "3"}, "--senders does not apply to group"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := run(context.Background(), tc.args, &stdout, &stderr)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("run(%q) = %v, want an error with %q", tc.args, err, tc.want)
			}
		})
	}
}
