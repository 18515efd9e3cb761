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
