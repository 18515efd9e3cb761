package main

import (
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"parley"
	"parley/stomp"
)

// TestClusterLimitsOneBudget reproduces issue 27's item 5: a client spread
// over three nodes gets one budget of sign-ups, STOMP sends and
// connections per user, not three (one per node).
func TestClusterLimitsOneBudget(t *testing.T) {
	env := needCluster(t)
	const (
		sendRate    = 10 // SENDs a second, bursts of 20, leases of 2
		sendBurst   = 2 * sendRate
		sendLease   = 2
		restRate    = 10 // REST sends a second, bursts of 20, leases of 2
		userConns   = 3
		signupBurst = 3 // at 1 a minute, leases of 1
	)
	limits := func(c *Config) {
		c.StompSendRate, c.StompMaxUserConns, c.RestSendRate = sendRate, userConns, restRate
		c.SignupRate, c.SignupBurst, c.TrustedProxies = 1, signupBurst, "127.0.0.1/32"
	}
	var nodes []*Main
	for i := range 3 {
		nodes = append(nodes, startNode(t, env, fmt.Sprint("n", i), limits))
	}

	t.Run("sign-ups", func(t *testing.T) {
		start := time.Now()
		created := 0
		for i := range 3 * signupBurst { // round-robin, as a balancer spreads them
			url := "http://" + nodes[i%3].Addr() + "/api/users"
			st, out := postFrom(url, "203.0.113.7", map[string]string{"name": fmt.Sprint("spread", i), "password": "correct horse"})
			switch st {
			case http.StatusCreated:
				created++
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("sign-up %d: %d %v", i, st, out)
			}
		}
		t.Logf("%d of %d sign-ups from one address over 3 nodes created", created, 3*signupBurst)
		// One a minute refills too: a slow machine may earn one more.
		if most := signupBurst + int(time.Since(start)/time.Minute); created < signupBurst || created > most {
			t.Errorf("%d sign-ups from one address over 3 nodes, want %d (one budget, not %d)", created, signupBurst, 3*signupBurst)
		}
	})

	alice, _ := mustSignUp(t, nodes[0].Addr(), "alice")
	var r room
	if st := alice.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "limits"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}

	t.Run("STOMP sends", func(t *testing.T) {
		var sessions []*stompClient // one per node, all open before the first refusal ends one
		for _, m := range nodes {
			sessions = append(sessions, dialStomp(t, m, "websocket", alice.token))
		}
		start := time.Now()
		receipted := 0
		for i, c := range sessions {
			receipted += sendUntilRefused(t, c, r.ID, fmt.Sprint("n", i), 3*sendBurst)
		}
		// The budget is the burst, what the rate refilled meanwhile,
		// and at most a lease per node leased before the window.
		elapsed := time.Since(start)
		t.Logf("%d SENDs receipted over 3 nodes in %v", receipted, elapsed)
		most := sendBurst + int(math.Ceil(sendRate*elapsed.Seconds())) + 3*sendLease
		if receipted < sendBurst || receipted > most {
			t.Errorf("%d SENDs receipted over 3 nodes in %v, want %d to %d (one budget of %d, not %d)",
				receipted, elapsed, sendBurst, most, sendBurst, 3*sendBurst)
		}
	})

	t.Run("REST sends", func(t *testing.T) {
		start := time.Now()
		created := 0
		for i := range 6 * restRate { // round-robin: three bursts' worth
			var msg message
			body := map[string]string{"body": fmt.Sprint("rest ", i), "client_id": fmt.Sprint("rest-", i)}
			switch st := on(alice, nodes[i%3]).do("POST", "/api/rooms/"+r.ID+"/messages", body, &msg); st {
			case http.StatusCreated:
				created++
			case http.StatusTooManyRequests:
			default:
				t.Fatalf("REST send %d: %d", i, st)
			}
		}
		elapsed := time.Since(start)
		t.Logf("%d REST sends created over 3 nodes in %v", created, elapsed)
		// Alice's new room took one token of this budget (REST sends and
		// new rooms share it), and the bucket may not have refilled it yet.
		least := 2*restRate - 1
		most := 2*restRate + int(math.Ceil(restRate*elapsed.Seconds())) + 3*sendLease
		if created < least || created > most {
			t.Errorf("%d REST sends over 3 nodes in %v, want %d to %d (one budget of %d, not %d)",
				created, elapsed, least, most, 2*restRate, 6*restRate)
		}
	})

	t.Run("connections per user", func(t *testing.T) {
		bob, _ := mustSignUp(t, nodes[1].Addr(), "bob")
		for _, m := range nodes { // one on each node: userConns in all
			dialStomp(t, m, "websocket", bob.token)
		}
		c := dialStompRefused(t, nodes[0], "websocket", bob.token) // node 0 holds one of bob's

		f := c.expect("ERROR", "code:"+parley.CodeRateLimited)
		if want := fmt.Sprintf("over %d connections for this user: close one first", userConns); string(f.Body) != want {
			t.Errorf("ERROR body %q, want %q", f.Body, want)
		}
		// Another user is not held back by bob's connections.
		carol, _ := mustSignUp(t, nodes[2].Addr(), "carol")
		dialStomp(t, nodes[2], "websocket", carol.token)
	})
}

// sendUntilRefused pipelines n receipted SENDs to roomID on c and returns
// how many got a RECEIPT before the ERROR rate_limited that ends the
// session (n when none).
func sendUntilRefused(t *testing.T, c *stompClient, roomID, tag string, n int) int {
	t.Helper()
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "SEND\ndestination:/app/rooms.%s\nreceipt:%s-%d\n\n%s %d\x00", roomID, tag, i, tag, i)
	}
	c.send(b.String())
	for got := 0; got < n; got++ {
		f := c.read()
		switch f.Command {
		case stomp.Receipt:
		case stomp.Error:
			if code := string(f.Get("code")); code != parley.CodeRateLimited {
				t.Fatalf("after %d receipts: %v, want ERROR %s", got, f, parley.CodeRateLimited)
			}
			return got
		default:
			t.Fatalf("after %d receipts: %v, want RECEIPT or ERROR", got, f)
		}
	}
	return n
}
