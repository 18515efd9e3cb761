package rest_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/chat"
	"parley/rest"
)

// stalledAuth is a chat service whose token checks wait for release, as
// on a store that stalls; entered says when one waits.
type stalledAuth struct {
	*fakeChat
	entered chan struct{}
	release chan struct{}
}

func (c *stalledAuth) Authenticate(ctx context.Context, token string) (parley.User, error) {
	c.entered <- struct{}{}
	<-c.release
	return c.fakeChat.Authenticate(ctx, token)
}

// deadlineListener hands out connections that note the last read
// deadline the HTTP server sets on them.
type deadlineListener struct {
	net.Listener
	last atomic.Int64 // unix ns of the last non-zero read deadline set
}

func (l *deadlineListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &deadlineConn{Conn: c, l: l}, nil
}

type deadlineConn struct {
	net.Conn
	l *deadlineListener
}

func (c *deadlineConn) SetReadDeadline(t time.Time) error {
	if !t.IsZero() {
		c.l.last.Store(t.UnixNano())
	}
	return c.Conn.SetReadDeadline(t)
}

// TestServerStallIsNotReadTime is issue 27 defect 4 on the REST API: a
// client sends a message's request whole and at once, its body a moment
// after its headers (as browsers do); the server checks the token (on a
// store that stalls) until the read deadline the HTTP server set when
// the request began has passed, and only then reads the body. The
// message must be sent (201), not refused as 400 "i/o timeout": the wait
// was the server's. The release is timed by that deadline itself, the
// server's clock, and only bounded below.
func TestServerStallIsNotReadTime(t *testing.T) {
	const readTimeout = 200 * time.Millisecond
	fc := newFakeChat()
	ctx := context.Background()
	if _, err := fc.Register(ctx, "alice", "correct horse battery"); err != nil {
		t.Fatal(err)
	}
	token, u, err := fc.Login(ctx, "alice", "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	room, _, err := fc.CreateRoom(ctx, u, chat.NewRoom{Kind: "group", Title: "r"})
	if err != nil {
		t.Fatal(err)
	}
	sc := &stalledAuth{fakeChat: fc, entered: make(chan struct{}, 1), release: make(chan struct{})}
	srv := httptest.NewUnstartedServer(rest.New(rest.Config{Chat: sc}))
	ln := &deadlineListener{Listener: srv.Listener}
	srv.Listener = ln
	srv.Config.ReadTimeout = readTimeout
	srv.Start()
	defer srv.Close()

	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	body := `{"body":"hello","client_id":"c1"}`
	fmt.Fprintf(conn, "POST /api/rooms/%s/messages HTTP/1.1\r\nHost: parley\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", room.ID, token, len(body))
	<-sc.entered // the headers are read: the body is not in the server's buffer
	if _, err := io.WriteString(conn, body); err != nil {
		t.Fatal(err)
	}
	last := ln.last.Load()
	if last == 0 {
		t.Fatal("the HTTP server set no read deadline")
	}
	// Past the request's deadline by another read timeout: the socket's
	// own timer has fired by then.
	<-time.After(time.Until(time.Unix(0, last)) + readTimeout)
	close(sc.release)

	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("read the response: %v", err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("POST a message whose token check outlasted the read timeout = %s %s, want 201", resp.Status, b)
	}
}
