package gateway

import (
	"context"
	"sync/atomic"
	"testing"
)

// heldSessions is a Sessions hook whose calls wait for the test: Opened,
// when openGate is set, until openGate is closed; Closed until release is
// closed.
type heldSessions struct {
	opened   chan string // each Opened user, as the call begins
	openGate chan struct{}
	closing  chan string // each Closed user, as the call begins
	release  chan struct{}
	finished atomic.Int32 // Closed calls that returned
}

func newHeldSessions(holdOpened bool) *heldSessions {
	h := &heldSessions{opened: make(chan string, 1), closing: make(chan string, 1), release: make(chan struct{})}
	if holdOpened {
		h.openGate = make(chan struct{})
	}
	return h
}

func (h *heldSessions) Opened(ctx context.Context, userID string) {
	h.opened <- userID
	if h.openGate != nil {
		<-h.openGate
	}
}

func (h *heldSessions) Closed(userID string) {
	h.closing <- userID
	<-h.release
	h.finished.Add(1)
}

// drainedSet reports whether Shutdown has begun and found, or since seen,
// every session gone: what is left for it is waiting for Closed calls.
func drainedSet(srv *Server) bool {
	srv.mu.Lock()
	d := srv.drained
	srv.mu.Unlock()
	if d == nil {
		return false
	}
	select {
	case <-d:
		return true
	default:
		return false
	}
}

// TestShutdownWaitsForClosed: when Shutdown returns, the Sessions.Closed
// call of every session has returned (cluster mode's Closed uses the Redis
// client, which is closed after Shutdown), whether the session ended at
// the shutdown or was closed while its CONNECT was being checked (Closed
// then runs on a goroutine of its own).
func TestShutdownWaitsForClosed(t *testing.T) {
	for _, tc := range []struct {
		name string
		// end makes the session of alice end, so that Closed begins
		// (before or during Shutdown, which start begins).
		end func(t *testing.T, e *env, c *client, h *heldSessions, start func())
	}{
		{"ends at shutdown", func(t *testing.T, e *env, c *client, h *heldSessions, start func()) {
			c.connect("alice")
			<-h.opened
			start()
			c.expect("ERROR")
			c.conn.Close()
		}},
		{"closed during its CONNECT", func(t *testing.T, e *env, c *client, h *heldSessions, start func()) {
			c.send("CONNECT\naccept-version:1.2\nhost:parley\nAuthorization:Bearer token-alice\nheart-beat:0,0\n\n\x00")
			<-h.opened // registered, and held in Opened
			e.srv.Revoke("u-alice", fakeTokenHash("token-alice"))
			c.expect("ERROR")
			c.conn.Close()
			waitFor(t, "the session to be closed", func() bool {
				e.srv.mu.Lock()
				defer e.srv.mu.Unlock()
				return len(e.srv.sessions) == 0
			})
			close(h.openGate) // connect finds the session closed: Closed on its own goroutine
			<-h.closing
			start()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHeldSessions(tc.name != "ends at shutdown")
			e := newEnv(t, Config{Sessions: h})
			e.chat.addUser("alice")
			c := e.dial(t, "tcp")
			done := make(chan int32)
			start := func() {
				go func() {
					e.srv.Shutdown(context.Background())
					done <- h.finished.Load()
				}()
			}
			tc.end(t, e, c, h, start)
			waitFor(t, "Shutdown to find the sessions gone", func() bool { return drainedSet(e.srv) })
			select {
			case <-h.closing:
			default: // the second case took it
			}
			close(h.release)
			if got := <-done; got != 1 {
				t.Errorf("Sessions.Closed calls returned when Shutdown returned = %d, want 1", got)
			}
		})
	}
}
