package gateway

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// poolPair starts a gateway with one pool worker and two subscribers of
// room r1 over TCP: fast (alice), which the test reads, and slow (carol,
// with a 4 KiB receive buffer). publish sends a message of 1,000 octets as
// carol, waits for fast to get it and returns its seq.
func poolPair(t *testing.T) (e *env, fast, slow *client, publish func() int) {
	t.Helper()
	e = newEnv(t, Config{Writers: 1, QueueFrames: 4096, WriteTimeout: time.Minute})
	e.chat.addUser("alice")
	carol := e.chat.addUser("carol")
	e.chat.addRoom("r1", carol)
	e.chat.mu.Lock()
	e.chat.members["r1"]["u-alice"] = true
	e.chat.mu.Unlock()

	fast = e.dial(t, "tcp")
	fast.connect("alice")
	slow = e.dialSmallBuffer(t)
	slow.connect("carol")
	for _, c := range []*client{fast, slow} {
		c.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1", "receipt:s"))
		c.expect("RECEIPT")
	}
	text := strings.Repeat("x", 1000)
	return e, fast, slow, func() int {
		t.Helper()
		m, _, err := e.chat.Send(t.Context(), carol, "r1", text, "")
		if err != nil {
			t.Fatal(err)
		}
		fast.expect("MESSAGE", "seq:"+strconv.FormatInt(m.Seq, 10))
		return int(m.Seq)
	}
}

// TestStalledSocketHoldsUpNoOne: with one pool worker, a subscriber that
// stops reading stalls its socket; the worker hands its write to a
// goroutine of the session's own and goes on writing the other session,
// which gets every message at once (in lockstep: no sleep). Once the slow
// client reads again it gets its whole stream, in seq order, across the
// hand-off, and its session goes back to the pool.
func TestStalledSocketHoldsUpNoOne(t *testing.T) {
	e, _, slow, publish := poolPair(t) // publish waits for the fast client
	seq := 0
	send := func() { seq = publish() }
	// The slow client reads nothing: its socket fills and stalls.
	for testutil.ToFloat64(e.srv.m.writeStalls) == 0 {
		if seq > 2000 {
			t.Fatalf("no write stalled after %d messages", seq)
		}
		send()
	}
	stalledAt := seq
	// The worker is not waiting for the slow client: the fast one gets
	// these as they are sent.
	for range 20 {
		send()
	}
	for want := 1; want <= seq; want++ {
		slow.expect("MESSAGE", "seq:"+strconv.Itoa(want))
	}
	t.Logf("stalled at seq %d", stalledAt)

	// The slow session's own writer is done: the pool writes it again.
	awaitWritersIdle(t, e)
	if n := e.srv.queuedFrames(); n != 0 {
		t.Errorf("%d frames counted as queued once all are written, want 0", n)
	}
	stalls := testutil.ToFloat64(e.srv.m.writeStalls)
	send()
	slow.expect("MESSAGE", "seq:"+strconv.Itoa(seq))
	if got := testutil.ToFloat64(e.srv.m.writeStalls); got != stalls {
		t.Errorf("write stalls went from %v to %v for a client that reads", stalls, got)
	}
}

// TestShutdownFlushesThroughPool: Shutdown writes every session's queue,
// then its going-away ERROR, also for a session whose write stalled and
// went to a goroutine of its own (one pool worker, which the other session
// shares); once the slow client reads again it gets its whole stream in
// order, Shutdown returns before its deadline, and the pool is closed.
func TestShutdownFlushesThroughPool(t *testing.T) {
	e, fast, slow, publish := poolPair(t)
	seq := 0
	// In lockstep with the fast client: once it has a message, the hub
	// has queued it for the slow one too.
	for stalled := 0; stalled < 10; {
		if seq > 2000 {
			t.Fatalf("no write stalled after %d messages", seq)
		}
		seq = publish()
		if testutil.ToFloat64(e.srv.m.writeStalls) > 0 {
			stalled++ // and a few more queued behind the stalled write
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	shutdown := make(chan error, 1)
	go func() { shutdown <- e.srv.Shutdown(ctx) }()
	fast.expect("ERROR", "code:unavailable")
	fast.expectClosed()
	for want := 1; want <= seq; want++ {
		slow.expect("MESSAGE", "seq:"+strconv.Itoa(want))
	}
	slow.expect("ERROR", "code:unavailable")
	slow.expectClosed()
	if err := <-shutdown; err != nil {
		t.Errorf("Shutdown() = %v, want nil", err)
	}
	e.srv.writers.mu.Lock()
	closed := e.srv.writers.closed
	e.srv.writers.mu.Unlock()
	if !closed {
		t.Error("the writer pool is open after Shutdown")
	}
}
