package gateway

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"parley"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSendNeverCommitted: a SEND whose commit does not come within
// SendTimeout, or before Shutdown's ctx ends, is refused as unavailable
// (retry with the same client-id), never as an internal error.
func TestSendNeverCommitted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		cut     bool // Shutdown begins while the SEND waits, and its ctx ends
		want    string
	}{
		{"timeout", 100 * time.Millisecond, false, "not committed within"},
		{"shutdown deadline", time.Minute, true, "send again with the same client-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, c, idle, _ := sendHeld(t, "tcp", Config{SendTimeout: tc.timeout})
			shutdown := make(chan error, 1)
			if tc.cut {
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() { shutdown <- e.srv.Shutdown(ctx) }()
				// The idle session goes away at once: Shutdown has begun,
				// and the SEND still waits, within its SendTimeout.
				idle.expect("ERROR", "code:unavailable")
				idle.expectClosed()
				cancel() // Shutdown's deadline
			}
			f := c.expect("ERROR", "code:unavailable", "message:unavailable", "receipt-id:s1")
			if !strings.Contains(string(f.Body), tc.want) {
				t.Errorf("ERROR body = %q, want it to say %q", f.Body, tc.want)
			}
			c.expectClosed()
			if tc.cut {
				if err := <-shutdown; !errors.Is(err, context.Canceled) {
					t.Errorf("Shutdown() = %v, want %v", err, context.Canceled)
				}
			}
		})
	}
}

// sendHeld starts a server with cfg whose store holds every write until
// release is closed (or the write's ctx ends), and alice's two sessions on
// it: c, whose SEND "first" (client-id c1, receipt s1) the store holds when
// sendHeld returns, and idle, which shows when Shutdown begins (it gets
// the going-away ERROR at once).
func sendHeld(t *testing.T, transport string, cfg Config) (e *env, c, idle *client, release chan struct{}) {
	t.Helper()
	e = newEnv(t, cfg)
	alice := e.chat.addUser("alice")
	e.chat.addRoom("r1", alice)
	held := make(chan struct{}, 1)
	release = make(chan struct{})
	e.chat.mu.Lock()
	e.chat.held, e.chat.release = held, release
	e.chat.mu.Unlock()
	c = e.dial(t, transport)
	c.connect("alice")
	idle = e.dial(t, transport)
	idle.connect("alice")
	c.send(frame("SEND", "first", "destination:/app/rooms.r1", "client-id:c1", "receipt:s1"))
	<-held
	return e, c, idle, release
}

// TestShutdownFinishesSend: a SEND waiting for its commit when Shutdown
// begins is let finish: the client gets its RECEIPT, then the going-away
// ERROR. A SEND that arrives after Shutdown began is not acted on.
func TestShutdownFinishesSend(t *testing.T) {
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			e, c, idle, release := sendHeld(t, transport, Config{})

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			shutdown := make(chan error, 1)
			go func() { shutdown <- e.srv.Shutdown(ctx) }()
			f := idle.expect("ERROR", "code:unavailable")
			if !strings.Contains(string(f.Body), "reconnect") {
				t.Errorf("going-away ERROR body = %q, want it to say reconnect", f.Body)
			}
			idle.expectClosed()

			// Shutdown has begun: this SEND must not act.
			c.send(frame("SEND", "second", "destination:/app/rooms.r1", "client-id:c2", "receipt:s2"))
			close(release) // the store commits the first
			c.expect("RECEIPT", "receipt-id:s1", "seq:1", "message-id")
			f = c.expect("ERROR", "code:unavailable", "message:unavailable")
			if r, ok := f.Lookup("receipt-id"); ok {
				t.Errorf("going-away ERROR has receipt-id %q, want none", r)
			}
			if !strings.Contains(string(f.Body), "reconnect") {
				t.Errorf("going-away ERROR body = %q, want it to say reconnect", f.Body)
			}
			c.expectClosed()
			if err := <-shutdown; err != nil {
				t.Errorf("Shutdown() = %v, want nil", err)
			}
			e.chat.mu.Lock()
			stored := len(e.chat.msgs["r1"])
			e.chat.mu.Unlock()
			if stored != 1 {
				t.Errorf("%d messages stored, want 1 (the SEND after Shutdown began must not act)", stored)
			}
		})
	}
}

// TestShutdownDeadlineStuckClient: once Shutdown's ctx has ended, a client
// that does not read cannot hold it: the write blocked on that client is
// cut short and the session closed, though WriteTimeout is far away, and
// it is not counted as a slow consumer.
func TestShutdownDeadlineStuckClient(t *testing.T) {
	e := newEnv(t, Config{WriteTimeout: time.Hour, QueueFrames: 1 << 20, QueueBytes: 1 << 30})
	alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
	e.chat.addRoom("r1", alice, bob)

	// A small receive buffer, so that the server's writes block soon after
	// the client stops reading.
	stuck := e.dialSmallBuffer(t)
	stuck.connect("bob")
	stuck.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1", "receipt:s"))
	stuck.expect("RECEIPT", "receipt-id:s")
	var s *session
	e.srv.mu.Lock()
	for o := range e.srv.sessions {
		s = o // the only one
	}
	e.srv.mu.Unlock()

	// Publish until more is queued behind the writer than the socket
	// buffers on both sides could take (Linux caps the send buffer at
	// 4 MiB by default): the writer has not come back for it because it
	// is blocked on the client.
	body := strings.Repeat("x", 4000)
	const piled = 2 * (4 << 20) / 4000
	for n := 1; ; n++ {
		if n == 100000 {
			t.Fatal("the writer never blocked")
		}
		if _, _, err := e.chat.Send(t.Context(), alice, "r1", body, ""); err != nil {
			t.Fatal(err)
		}
		s.mu.Lock()
		queued := 0
		if s.q != nil {
			queued = len(s.q.items)
		}
		s.mu.Unlock()
		if queued > piled {
			break
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel() // the deadline has passed
	if err := e.srv.Shutdown(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("Shutdown() = %v, want %v", err, context.Canceled)
	}
	e.srv.mu.Lock()
	left := len(e.srv.sessions)
	e.srv.mu.Unlock()
	if left != 0 {
		t.Errorf("%d sessions left after Shutdown, want 0", left)
	}
	if n := testutil.ToFloat64(e.srv.m.slowConsumer.WithLabelValues(reasonWriteTimeout)); n != 0 {
		t.Errorf("%v write_timeout slow-consumer closes, want 0", n)
	}
}

// TestShutdownPipelinedSendNoReset: a client that sent another SEND behind
// the one Shutdown lets finish, and reads only after Shutdown is done,
// still gets the RECEIPT and the going-away ERROR, then a clean end of
// stream: the server reads the unacted frame away before it closes, so the
// close is not a reset that would throw the last frames away.
func TestShutdownPipelinedSendNoReset(t *testing.T) {
	for _, transport := range transports {
		t.Run(transport, func(t *testing.T) {
			e, c, idle, release := sendHeld(t, transport, Config{})

			shutdown := make(chan error, 1)
			go func() { shutdown <- e.srv.Shutdown(context.Background()) }()
			idle.expect("ERROR", "code:unavailable")
			c.send(frame("SEND", "second", "destination:/app/rooms.r1", "client-id:c2", "receipt:s2"))
			close(release)
			if err := <-shutdown; err != nil {
				t.Fatalf("Shutdown() = %v, want nil", err)
			}
			c.expect("RECEIPT", "receipt-id:s1")
			c.expect("ERROR", "code:unavailable")
			if f, err := c.read(); !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) {
				t.Errorf("after the ERROR: %v, %v; want a clean end of stream, not a reset", f, err)
			}
		})
	}
}

// TestRefusalCountedOnce: a SEND that times out while Shutdown drains its
// session is refused once, and counted once: the going-away ERROR that
// would follow it is never sent, so it is not counted either.
func TestRefusalCountedOnce(t *testing.T) {
	e, c, _, _ := sendHeld(t, "tcp", Config{SendTimeout: 200 * time.Millisecond})
	go e.srv.Shutdown(context.Background())
	c.expect("ERROR", "code:unavailable", "receipt-id:s1")
	c.expectClosed()
	// The idle session's going-away ERROR and c's: one each.
	if n := testutil.ToFloat64(e.srv.m.refusals[refusalIndex(parley.CodeUnavailable)]); n != 2 {
		t.Errorf("parley_stomp_refusals_total{code=unavailable} = %v for two refused sessions, want 2", n)
	}
}

// TestLingerBounded: a session that has written its last frames waits for
// its client to close for LingerTime at most, and not at all once
// Shutdown's ctx has ended. Here LingerTime is an hour and the clients
// never close: Shutdown returns only because its ctx ends, and a client
// trickling the bytes of an unfinished frame (which moves the socket's
// read deadline to the frame timeout, also an hour) cannot hold it.
func TestLingerBounded(t *testing.T) {
	e := newEnv(t, Config{LingerTime: time.Hour, FrameTimeout: time.Hour})
	alice := e.chat.addUser("alice")
	e.chat.addRoom("r1", alice)
	idle := e.dial(t, "tcp")
	idle.connect("alice")
	trickle := e.dial(t, "tcp")
	trickle.connect("alice")
	trickle.send("SEND\ndestination:/app/rooms.r1\n\nx") // a frame begun, never ended
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
				if _, err := trickle.conn.Write([]byte("x")); err != nil {
					return
				}
			}
		}
	}()

	ctx, cancel := context.WithCancel(context.Background())
	shutdown := make(chan error, 1)
	go func() { shutdown <- e.srv.Shutdown(ctx) }()
	idle.expect("ERROR", "code:unavailable") // the sessions are refused and linger
	select {
	case err := <-shutdown:
		t.Fatalf("Shutdown() = %v before its ctx ended: the clients never closed, so the sessions should still linger", err)
	case <-time.After(200 * time.Millisecond):
	}
	cancel()
	select {
	case err := <-shutdown:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Shutdown() = %v, want context.Canceled", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("Shutdown still waits on lingering sessions after its ctx ended")
	}
}
