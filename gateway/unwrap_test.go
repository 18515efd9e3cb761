package gateway

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

// wrappedConn is a connection an HTTP server's listener wrapped, with
// the socket under it, as cmd/parley's (accept.Sweeper) does.
type wrappedConn struct{ net.Conn }

func (c wrappedConn) NetConn() net.Conn { return c.Conn }

type wrappingListener struct{ net.Listener }

func (l wrappingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return wrappedConn{c}, nil
}

// TestWebSocketTakesSocket: a WebSocket session hijacked from a wrapped
// connection runs on the socket under it (NetConn), so that the poller
// watches its descriptor instead of a goroutine reading the wrapper.
func TestWebSocketTakesSocket(t *testing.T) {
	e := newEnv(t, Config{})
	e.chat.addUser("alice")
	mux := http.NewServeMux()
	mux.Handle("/ws", e.srv)
	ts := httptest.NewUnstartedServer(mux)
	ts.Listener = wrappingListener{ts.Listener}
	ts.Start()
	defer ts.Close()
	e.http = ts

	a := e.dial(t, "websocket")
	a.connect("alice")
	e.srv.mu.Lock()
	defer e.srv.mu.Unlock()
	if len(e.srv.sessions) != 1 {
		t.Fatalf("%d sessions, want 1", len(e.srv.sessions))
	}
	for s := range e.srv.sessions {
		if _, ok := s.conn.(wrappedConn); ok {
			t.Errorf("the session's connection is the listener's wrapper, want the socket under it")
		}
		if s.rc == nil {
			t.Errorf("the session has no raw socket to poll")
		}
	}
}
