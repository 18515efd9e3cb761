package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/stomp"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// waitFor polls cond (a metric, typically) until it holds; the test's
// timeout bounds it.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for !cond() {
		if t.Context().Err() != nil {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// sendAll pipelines n receipted SENDs on c and returns how many got a
// RECEIPT; the rest must be refused with ERROR rate_limited.
func sendAll(t *testing.T, c *client, n int) int {
	t.Helper()
	for i := range n {
		c.send(frame("SEND", "spam", "destination:/app/rooms.r1", "receipt:"+strconv.Itoa(i)))
	}
	for got := 0; got < n; got++ {
		f, err := c.read()
		if err != nil {
			t.Fatalf("after %d receipts: %v", got, err)
		}
		switch f.Command {
		case stomp.Receipt:
		case stomp.Error:
			if code := string(f.Get("code")); code != parley.CodeRateLimited {
				t.Errorf("got %v, want code %s", f, parley.CodeRateLimited)
			}
			c.expectClosed()
			return got
		default:
			t.Fatalf("got %v, want RECEIPT or ERROR", f)
		}
	}
	return n
}

// TestSendRatePerUser reproduces issue 10 defect 5: one user on 25
// connections gets the advertised budget in total, not 25 of them. The
// clock stands still, so the budget is exactly the burst.
func TestSendRatePerUser(t *testing.T) {
	var offset atomic.Int64
	t0 := time.Now()
	cfg := Config{now: func() time.Time { return t0.Add(time.Duration(offset.Load())) }}
	e := newEnv(t, cfg)
	alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
	e.chat.addRoom("r1", alice, bob)
	burst, rate := e.srv.cfg.SendBurst, e.srv.cfg.SendRate

	var conns []*client
	for i := range 25 {
		c := e.dial(t, transports[i%2])
		c.connect("alice")
		conns = append(conns, c)
	}
	total := 0
	var open []*client
	for _, c := range conns {
		n := sendAll(t, c, 3)
		total += n
		if n == 3 {
			open = append(open, c)
		}
	}
	if total != burst {
		t.Errorf("one user on 25 connections: %d SENDs receipted at once, want the burst %d", total, burst)
	}

	// A second later the user has the rate again, however many
	// connections ask.
	offset.Add(int64(time.Second))
	total = 0
	for _, c := range open {
		total += sendAll(t, c, 3)
	}
	if want := int(rate); total != want {
		t.Errorf("one user, a second later: %d SENDs receipted, want the rate %d", total, want)
	}

	// Another user's budget is untouched.
	b := e.dial(t, "tcp")
	b.connect("bob")
	if n := sendAll(t, b, burst); n != burst {
		t.Errorf("another user: %d SENDs receipted, want the burst %d", n, burst)
	}
}

// TestConnsPerUser checks that a user gets MaxConnsPerUser connections on
// a node (32 by default) and that the next is refused with ERROR and
// closed, counted, while other users connect; closing one makes room.
func TestConnsPerUser(t *testing.T) {
	e := newEnv(t, Config{})
	e.chat.addUser("alice")
	e.chat.addUser("bob")
	refused := e.srv.m.connRefusals[refusedUserLimit]
	var conns []*client
	for i := range 32 {
		c := e.dial(t, transports[i%2])
		c.connect("alice")
		conns = append(conns, c)
	}
	for i, tr := range transports {
		c := e.dial(t, tr)
		c.send(connectFrame)
		f := c.expect("ERROR", "code:"+parley.CodeRateLimited)
		if want := "over 32 connections for this user: close one first"; string(f.Body) != want {
			t.Errorf("ERROR body %q, want %q", f.Body, want)
		}
		c.expectClosed()
		if got := testutil.ToFloat64(refused); got != float64(i+1) {
			t.Errorf("user_limit refusals = %v, want %d", got, i+1)
		}
	}
	e.dial(t, "tcp").connect("bob")

	conns[0].send(frame("DISCONNECT", "", "receipt:bye"))
	conns[0].expect("RECEIPT")
	conns[0].expectClosed()
	waitFor(t, "the session to close", func() bool { return testutil.ToFloat64(e.srv.m.connections) == 32 })
	e.dial(t, "websocket").connect("alice")
}

// TestNodeConnCap checks MaxConns: over it a WebSocket upgrade gets 503
// with a JSON error and a TCP connection ERROR unavailable then the
// close, each counted; a closed connection makes room.
func TestNodeConnCap(t *testing.T) {
	e := newEnv(t, Config{MaxConns: 3})
	for _, name := range []string{"alice", "bob", "carol"} {
		e.chat.addUser(name)
	}
	refused := e.srv.m.connRefusals[refusedNodeLimit]
	a := e.dial(t, "websocket")
	a.connect("alice")
	e.dial(t, "tcp").connect("bob")
	e.dial(t, "websocket").connect("carol")

	c := e.dial(t, "tcp")
	c.expect("ERROR", "code:"+parley.CodeUnavailable)
	c.expectClosed()

	resp, err := http.Get(e.http.URL + "/ws")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct{ Code, Message string }
	}
	err = json.NewDecoder(resp.Body).Decode(&body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || err != nil || body.Error.Code != parley.CodeUnavailable {
		t.Errorf("GET /ws over the cap = %d %+v (%v), want 503 code %s", resp.StatusCode, body, err, parley.CodeUnavailable)
	}
	if got := testutil.ToFloat64(refused); got != 2 {
		t.Errorf("node_limit refusals = %v, want 2", got)
	}

	a.send(frame("DISCONNECT", "", "receipt:bye"))
	a.expect("RECEIPT")
	a.expectClosed()
	waitFor(t, "the session to close", func() bool { return testutil.ToFloat64(e.srv.m.connections) == 2 })
	e.dial(t, "tcp").connect("alice")
}

// fakeUserConns is a UserConns that two gateways share, as nodes share
// Redis.
type fakeUserConns struct {
	mu   sync.Mutex                 // guards open
	open map[string]map[string]bool // user -> sessions
}

func (f *fakeUserConns) Acquire(ctx context.Context, userID, session string, max int) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.open[userID]) >= max {
		return false
	}
	if f.open[userID] == nil {
		f.open[userID] = map[string]bool{}
	}
	f.open[userID][session] = true
	return true
}

func (f *fakeUserConns) Release(userID, session string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.open[userID], session)
}

func (f *fakeUserConns) count(userID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.open[userID])
}

// TestConnsPerUserOverTheCluster: with UserConns, MaxConnsPerUser holds
// over two gateways together; the refusal is the per-node one, and a
// closed session is released.
func TestConnsPerUserOverTheCluster(t *testing.T) {
	shared := &fakeUserConns{open: map[string]map[string]bool{}}
	a := newEnv(t, Config{MaxConnsPerUser: 2, UserConns: shared})
	b := newEnv(t, Config{MaxConnsPerUser: 2, UserConns: shared})
	for _, e := range []*env{a, b} {
		e.chat.addUser("alice")
	}
	first := a.dial(t, "tcp")
	first.connect("alice")
	b.dial(t, "websocket").connect("alice")
	c := b.dial(t, "tcp")
	c.send(connectFrame)
	c.expectRefused(parley.CodeRateLimited, "over 2 connections for this user: close one first")
	if got := testutil.ToFloat64(b.srv.m.connRefusals[refusedUserLimit]); got != 1 {
		t.Errorf("user_limit refusals on b = %v, want 1", got)
	}
	first.send(frame("DISCONNECT", "", "receipt:bye"))
	first.expect("RECEIPT")
	first.expectClosed()
	waitFor(t, "the closed session's release", func() bool { return shared.count("u-alice") == 1 })
	b.dial(t, "tcp").connect("alice")
}
