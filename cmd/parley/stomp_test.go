package main

import (
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"parley/stomp"
)

// stompClient is a STOMP conversation with a running node.
type stompClient struct {
	t    testing.TB
	conn net.Conn
	r    *stomp.Reader
}

// dialStomp connects to m over WebSocket (/ws) or raw TCP (--stomp-addr)
// and sends CONNECT with token.
func dialStomp(t testing.TB, m *Main, transport, token string) *stompClient {
	t.Helper()
	if transport == "websocket" {
		return dialStompAt(t, transport, m.Addr(), token)
	}
	return dialStompAt(t, transport, m.StompAddr(), token)
}

// dialStompAt is dialStomp to an address: the HTTP one for "websocket",
// the STOMP listener's for "tcp".
func dialStompAt(t testing.TB, transport, addr, token string) *stompClient {
	t.Helper()
	c := dialStompToken(t, transport, addr, "Authorization", token)
	c.expect("CONNECTED", "version:1.2")
	return c
}

// send writes raw, failing the test (from the test's goroutine only).
func (c *stompClient) send(raw string) {
	c.t.Helper()
	if err := c.write(raw); err != nil {
		c.t.Fatalf("send: %v", err)
	}
}

// write writes raw; it is safe on any goroutine.
func (c *stompClient) write(raw string) error {
	_, err := c.conn.Write([]byte(raw))
	return err
}

// read returns the next frame other than a heart-beat, failing the test
// (from the test's goroutine only).
func (c *stompClient) read() *stomp.Frame {
	c.t.Helper()
	f, err := c.next()
	if err != nil {
		c.t.Fatalf("read: %v", err)
	}
	return f
}

// next returns the next frame other than a heart-beat, waiting at most
// 10 s; it is safe on any goroutine.
func (c *stompClient) next() (*stomp.Frame, error) {
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := c.r.Read()
	for err == nil && f.Command == stomp.Heartbeat {
		f, err = c.r.Read()
	}
	return f, err
}

// expect reads the next frame (heart-beats skipped) and checks its command
// and "name:value" headers.
func (c *stompClient) expect(cmd string, headers ...string) *stomp.Frame {
	c.t.Helper()
	f := c.read()
	if f.Command.String() != cmd {
		c.t.Fatalf("got %v, want %s", f, cmd)
	}
	for _, h := range headers {
		name, want, _ := strings.Cut(h, ":")
		if got, ok := f.Lookup(name); !ok || string(got) != want {
			c.t.Fatalf("got %v, want header %s", f, h)
		}
	}
	return f
}

// TestStompAndRESTMeet checks that a REST send and a STOMP send reach the
// same subscribers, over WebSocket and TCP, through the real node.
func TestStompAndRESTMeet(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.StompAddr = "127.0.0.1:0" })
	alice, _ := mustSignUp(t, m.Addr(), "alice")
	bob, _ := mustSignUp(t, m.Addr(), "bob")
	var r room
	if st := alice.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "meet"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := bob.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: %d", st)
	}

	ws := dialStomp(t, m, "websocket", bob.token)
	ws.send("SUBSCRIBE\nid:0\ndestination:/topic/rooms." + r.ID + "\nreceipt:s\n\n\x00")
	ws.expect("RECEIPT", "receipt-id:s")
	tcp := dialStomp(t, m, "tcp", alice.token)
	tcp.send("SUBSCRIBE\nid:q\ndestination:/user/queue/messages\nreceipt:s\n\n\x00")
	tcp.expect("RECEIPT", "receipt-id:s")

	var sent message
	if st := alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "from rest"}, &sent); st != http.StatusCreated {
		t.Fatalf("REST send: %d", st)
	}
	ws.expect("MESSAGE", "seq:1", "message-id:"+sent.ID, "sender-name:alice", "destination:/topic/rooms."+r.ID)
	tcp.expect("MESSAGE", "seq:1", "subscription:q", "destination:/user/queue/messages")

	ws.send("SEND\ndestination:/app/rooms." + r.ID + "\nclient-id:k\nreceipt:7\n\nfrom stomp\x00")
	// The RECEIPT and bob's own copy may come in either order.
	for range 2 {
		f := ws.read()
		got := string(f.Get("seq")) + " " + string(f.Get("receipt-id")) + string(f.Get("client-id"))
		if want := map[stomp.Command]string{stomp.Receipt: "2 7", stomp.Message: "2 k"}[f.Command]; got != want {
			t.Errorf("got %v, want seq 2 (RECEIPT 7 or MESSAGE with client-id k)", f)
		}
	}
	tcp.expect("MESSAGE", "seq:2", "sender-name:bob")

	var page struct{ Messages []message }
	alice.do("GET", "/api/rooms/"+r.ID+"/messages?after=0", nil, &page)
	if got := seqs(page.Messages); got != "1,2" || page.Messages[1].Body != "from stomp" {
		t.Errorf("history = %s %+v, want 1,2 with the STOMP message", got, page.Messages)
	}

	// A member who leaves stops receiving at once.
	bob.do("DELETE", "/api/rooms/"+r.ID+"/members/me", nil, nil)
	alice.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": "bob is gone"}, nil)
	tcp.expect("MESSAGE", "seq:3")
	ws.send("DISCONNECT\nreceipt:bye\n\n\x00")
	ws.expect("RECEIPT", "receipt-id:bye")
}
