package accept

import (
	"errors"
	"net"
	"os"
	"testing"
	"time"
)

// idleSweeper is a Sweeper whose own sweeps never come during a test:
// the test sweeps by hand, at the times it chooses.
func idleSweeper(t *testing.T) *Sweeper {
	t.Helper()
	s := NewSweeper(time.Hour)
	t.Cleanup(s.Close)
	return s
}

// pipe returns the two ends of a connection, the first wrapped by s.
func pipe(t *testing.T, s *Sweeper) (wrapped, peer net.Conn) {
	t.Helper()
	a, b := net.Pipe()
	t.Cleanup(func() { a.Close(); b.Close() })
	return s.Wrap(a), b
}

// read reads one byte from c in a goroutine; its error (nil with the
// byte read) arrives on the channel.
func read(c net.Conn) <-chan error {
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 1))
		done <- err
	}()
	return done
}

// outcome waits at most 10 s for a read or write's result on done.
func outcome(t *testing.T, what string, done <-chan error) error {
	t.Helper()
	select {
	case err := <-done:
		return err
	case <-time.After(10 * time.Second):
		t.Fatalf("%s: still blocked after 10 s", what)
		return nil
	}
}

func wantTimeout(t *testing.T, what string, done <-chan error) {
	t.Helper()
	if err := outcome(t, what, done); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("%s: %v, want a deadline error", what, err)
	}
}

func wantByte(t *testing.T, what string, peer net.Conn, done <-chan error) {
	t.Helper()
	go peer.Write([]byte{1}) // fails once the test closes the pipe, if unread
	if err := outcome(t, what, done); err != nil {
		t.Errorf("%s: %v, want the byte the peer wrote", what, err)
	}
}

// TestSweeperRead: a read deadline fires at the first sweep at or after
// it, not before, and a later deadline set before that sweep stands
// instead; once fired, a new deadline clears the socket's.
func TestSweeperRead(t *testing.T) {
	s := idleSweeper(t)
	c, peer := pipe(t, s)
	t0 := time.Now().Add(time.Minute)

	c.SetReadDeadline(t0)
	s.sweep(t0.Add(-time.Nanosecond), nil)
	wantByte(t, "read swept just before its deadline", peer, read(c))

	c.SetReadDeadline(t0.Add(time.Minute)) // moved on, as net/http does per request
	s.sweep(t0, nil)
	wantByte(t, "read past the old deadline, before the new one", peer, read(c))

	done := read(c)
	s.sweep(t0.Add(time.Minute), nil)
	wantTimeout(t, "a blocked read swept at its deadline", done)

	c.SetReadDeadline(time.Time{})
	wantByte(t, "read after the deadline is cleared", peer, read(c))
}

// TestSweeperWrite: the same for a write the peer does not read.
func TestSweeperWrite(t *testing.T) {
	s := idleSweeper(t)
	c, peer := pipe(t, s)
	t0 := time.Now().Add(time.Minute)

	c.SetWriteDeadline(t0)
	done := make(chan error, 1)
	go func() {
		_, err := c.Write([]byte{1})
		done <- err
	}()
	s.sweep(t0, nil)
	wantTimeout(t, "a blocked write swept at its deadline", done)

	c.SetWriteDeadline(t0.Add(time.Hour))
	go func() {
		_, err := c.Write([]byte{2})
		done <- err
	}()
	if _, err := peer.Read(make([]byte, 1)); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Errorf("write after a later deadline replaced the fired one: %v, want none", err)
	}
}

// TestSweeperPassedDeadline: a deadline already passed (net/http's way to
// wake a pending read, time.Unix(1, 0)) goes to the socket at once, with
// no sweep.
func TestSweeperPassedDeadline(t *testing.T) {
	s := idleSweeper(t)
	c, peer := pipe(t, s)
	done := read(c)
	c.SetReadDeadline(time.Unix(1, 0))
	wantTimeout(t, "a blocked read given a deadline long passed", done)
	c.SetReadDeadline(time.Time{})
	wantByte(t, "read after the deadline is cleared", peer, read(c))
}

// TestSweeperExact: a hijacked connection's deadlines go to the socket
// (no sweep fires them), and the Sweeper forgets it, as it forgets a
// closed one.
func TestSweeperExact(t *testing.T) {
	s := idleSweeper(t)
	c, _ := pipe(t, s)
	closed, _ := pipe(t, s)
	if n := s.Len(); n != 2 {
		t.Fatalf("Len = %d after two wraps, want 2", n)
	}
	closed.Close()
	Exact(c)
	if n := s.Len(); n != 0 {
		t.Errorf("Len = %d after a Close and an Exact, want 0", n)
	}
	done := read(c)
	c.SetReadDeadline(time.Now().Add(10 * time.Millisecond))
	wantTimeout(t, "a blocked read of an exact connection, with no sweep", done)
	if nc := c.(interface{ NetConn() net.Conn }).NetConn(); nc == c {
		t.Errorf("NetConn returned the wrapper, want the socket")
	}
}

// TestSweeperRuns: the Sweeper's own sweeps fire a deadline.
func TestSweeperRuns(t *testing.T) {
	s := NewSweeper(time.Millisecond)
	defer s.Close()
	c, _ := pipe(t, s)
	done := read(c)
	c.SetReadDeadline(time.Now().Add(5 * time.Millisecond))
	wantTimeout(t, "a blocked read with a deadline, swept every ms", done)
}

func TestSweepPeriod(t *testing.T) {
	for _, tc := range []struct {
		name     string
		timeouts []time.Duration
		want     time.Duration
	}{
		{"none", nil, time.Second},
		{"zeros", []time.Duration{0, 0}, time.Second},
		{"defaults", []time.Duration{10 * time.Second, 2 * time.Minute, 10 * time.Second, 30 * time.Second}, 625 * time.Millisecond},
		{"short", []time.Duration{250 * time.Millisecond, 0}, 15625 * time.Microsecond},
		{"tiny", []time.Duration{time.Millisecond}, time.Millisecond},
	} {
		if got := SweepPeriod(tc.timeouts...); got != tc.want {
			t.Errorf("%s: SweepPeriod(%v) = %v, want %v", tc.name, tc.timeouts, got, tc.want)
		}
	}
}

// BenchmarkSetDeadline: the deadlines net/http moves on every request of
// a keep-alive connection with ReadTimeout, WriteTimeout and IdleTimeout
// (idle, header, whole request, response), on a TCP socket and on the
// same socket wrapped by a Sweeper.
func BenchmarkSetDeadline(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	raw, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	s := NewSweeper(time.Second)
	defer s.Close()
	for _, tc := range []struct {
		name string
		c    net.Conn
	}{{"socket", raw}, {"swept", s.Wrap(raw)}} {
		b.Run(tc.name, func(b *testing.B) {
			for b.Loop() {
				now := time.Now()
				tc.c.SetReadDeadline(now.Add(2 * time.Minute))
				tc.c.SetReadDeadline(now.Add(10 * time.Second))
				tc.c.SetReadDeadline(now.Add(10 * time.Second))
				tc.c.SetWriteDeadline(now.Add(30 * time.Second))
				tc.c.SetWriteDeadline(time.Time{})
			}
		})
	}
}
