package gateway

import (
	"strconv"
	"testing"
	"time"

	"parley/parleytest"
	"parley/stomp"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestWriteDelay: with a write delay, the MESSAGE frames queued for a
// session wait for it, and the next frame that is not a MESSAGE (here a
// RECEIPT) ends the wait at once: everything queued goes out in one
// socket write, in order. The delay is an hour, so only the RECEIPT (and
// Shutdown, at the end) can end it within the test.
func TestWriteDelay(t *testing.T) {
	forEachTransport(t, Config{WriteDelay: time.Hour}, func(t *testing.T, e *env, tr string) {
		alice := e.chat.addUser("alice")
		e.chat.addRoom("r1", alice)
		c := e.dial(t, tr)
		c.connect("alice")
		c.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1", "receipt:s0"))
		c.expect("RECEIPT", "receipt-id:s0")
		awaitWritersIdle(t, e) // the RECEIPT's writer has returned

		for i := 1; i <= 3; i++ {
			c.send(frame("SEND", "m"+strconv.Itoa(i), "destination:/app/rooms.r1"))
		}
		// The three messages wait in the queue: no write since the
		// RECEIPT.
		writes := testutil.ToFloat64(e.srv.m.writes)
		awaitQueued(t, e, 3)
		if got := testutil.ToFloat64(e.srv.m.writes); got != writes {
			t.Errorf("%v writes while the messages wait, want none", got-writes)
		}

		c.send(frame("SEND", "m4", "destination:/app/rooms.r1", "receipt:r4"))
		for i := 1; i <= 3; i++ {
			f := c.expect("MESSAGE", "seq:"+strconv.Itoa(i))
			if want := "m" + strconv.Itoa(i); string(f.Body) != want {
				t.Errorf("body %q, want %q", f.Body, want)
			}
		}
		// m4's own copy may be queued before or after its RECEIPT (the
		// hub fans out apart from the SEND's answer): after it, it waits
		// again, and Shutdown (the test's cleanup) must not wait for it.
		f, err := c.read()
		if err == nil && f.Command == stomp.Message && string(f.Get("seq")) == "4" {
			f, err = c.read()
		}
		if err != nil || f.Command != stomp.Receipt || string(f.Get("receipt-id")) != "r4" {
			t.Fatalf("got %v, %v, want RECEIPT receipt-id:r4", f, err)
		}
		if got := testutil.ToFloat64(e.srv.m.writes) - writes; got != 1 {
			t.Errorf("the messages and the RECEIPT took %v writes, want 1", got)
		}
	})
}

// awaitWritersIdle waits (at most 10 s) until no session of the node has
// a writer running or pending.
func awaitWritersIdle(t *testing.T, e *env) {
	t.Helper()
	busy := func() bool {
		e.srv.mu.Lock() // a leaf: the sessions are looked at after it
		var ss []*session
		for s := range e.srv.sessions {
			ss = append(ss, s)
		}
		e.srv.mu.Unlock()
		for _, s := range ss {
			s.mu.Lock()
			w := s.writing
			s.mu.Unlock()
			if w {
				return true
			}
		}
		return false
	}
	parleytest.Eventually(t, 10*time.Second, func() bool { return !busy() }, "a writer still runs")
}

// awaitQueued waits (at most 10 s) until n frames are queued on the node.
func awaitQueued(t *testing.T, e *env, n int64) {
	t.Helper()
	if !parleytest.Poll(10*time.Second, func() bool { return e.srv.queuedFrames() == n }) {
		t.Fatalf("%d frames queued, want %d", e.srv.queuedFrames(), n)
	}
}

func TestWriteWait(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name  string
		last  time.Time
		now   time.Time
		delay time.Duration
		want  time.Duration
	}{
		{"no delay", t0, t0, 0, 0},
		{"never written", time.Time{}, t0, time.Second, 0},
		{"just written", t0, t0, 5 * time.Millisecond, 5 * time.Millisecond},
		{"within the delay", t0, t0.Add(2 * time.Millisecond), 5 * time.Millisecond, 3 * time.Millisecond},
		{"after a quiet spell", t0, t0.Add(time.Second), 5 * time.Millisecond, -995 * time.Millisecond},
	} {
		if got := writeWait(tc.last, tc.now, tc.delay); got != tc.want {
			t.Errorf("%s: writeWait(%v, %v, %v) = %v, want %v", tc.name, tc.last, tc.now, tc.delay, got, tc.want)
		}
	}
}
