package gateway

import (
	"io"
	"net"
	"testing"
	"time"
)

// TestWriteAllocatesNothing: a socket write, done for every batch of
// frames to every session, allocates nothing while the server is not
// being forced down (the forced path's closure must stay off it).
func TestWriteAllocatesNothing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err == nil {
			io.Copy(io.Discard, c)
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := &session{srv: &Server{cfg: Config{WriteTimeout: time.Minute}}, conn: c}
	b := []byte("MESSAGE\ndestination:/topic/rooms.r1\n\nhello\x00")
	if n := testing.AllocsPerRun(1000, func() {
		if err := s.write(b); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("session.write: %v allocations, want 0", n)
	}
}

// socketSession is a session with only what write needs, on one end of a
// loopback TCP connection, polled like an accepted one (rc, nowFn); the
// other end is returned.
func socketSession(t testing.TB) (*session, net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	if peer == nil {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); peer.Close() })
	rc, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	s := &session{srv: &Server{cfg: Config{WriteTimeout: time.Minute}}, conn: c, rc: rc}
	s.nowFn = s.writeSome
	return s, peer
}

// TestWritePolledAllocatesNothing: the same for a polled socket, whose
// writes go out without a deadline when the socket takes them at once.
func TestWritePolledAllocatesNothing(t *testing.T) {
	s, peer := socketSession(t)
	go io.Copy(io.Discard, peer)
	b := []byte("MESSAGE\ndestination:/topic/rooms.r1\n\nhello\x00")
	if n := testing.AllocsPerRun(1000, func() {
		if err := s.write(b); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("session.write: %v allocations, want 0", n)
	}
}

// TestWriteAfterPastDeadline: a write deadline that has passed, as a
// forced Shutdown's (interruptWrite) is, fails no write of a server that
// is not forced, and a forced one still writes what the socket takes at
// once, and fails at once, without waiting, for what it does not.
func TestWriteAfterPastDeadline(t *testing.T) {
	s, peer := socketSession(t)
	b := []byte("MESSAGE\ndestination:/topic/rooms.r1\n\nhello\x00")
	s.conn.SetWriteDeadline(time.Now().Add(-time.Second))
	if err := s.write(b); err != nil {
		t.Fatalf("write after a past deadline: %v", err)
	}
	got := make([]byte, len(b))
	if _, err := io.ReadFull(peer, got); err != nil || string(got) != string(b) {
		t.Fatalf("peer read %q, %v; want %q", got, err, b)
	}

	s.srv.forced.Store(true)
	s.interruptWrite()
	if err := s.write(b); err != nil {
		t.Fatalf("forced write the socket takes: %v", err)
	}
	if _, err := io.ReadFull(peer, got); err != nil || string(got) != string(b) {
		t.Fatalf("peer read %q, %v; want %q", got, err, b)
	}
	// The peer reads nothing more: a write larger than both socket
	// buffers fails at once instead of waiting for it.
	big := make([]byte, 64<<20)
	if err := s.write(big); err == nil {
		t.Fatal("forced write of 64 MiB to a peer that does not read: no error")
	}
}
