package gateway

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"parley"
	"parley/hub"
	"parley/parleytest"
	"parley/roomevents"
	"parley/stomp"

	"github.com/coder/websocket"
	"github.com/prometheus/client_golang/prometheus"
)

// env is a running gateway over a fake chat service.
type env struct {
	chat    *fakeChat
	hub     *hub.Hub
	srv     *Server
	http    *httptest.Server
	tcpAddr string
	reg     *prometheus.Registry
	events  *roomevents.Events
	clock   *parleytest.Clock // the room events' clock
	// presenceCalls counts the gateway's OnPresence calls.
	presenceCalls atomic.Int64
}

// lazySeen is the env's gateway as the events' presence lookup, made
// before the gateway is.
type lazySeen env

func (l *lazySeen) Seen(ctx context.Context, ids []string) (map[string]parley.Seen, error) {
	return l.srv.Seen(ctx, ids)
}

// newEnv starts a gateway with cfg (Chat and Hub filled in) on a WebSocket
// test server and a TCP listener, both on 127.0.0.1.
func newEnv(t testing.TB, cfg Config) *env {
	t.Helper()
	e := &env{chat: newFakeChat(), reg: prometheus.NewRegistry(), clock: parleytest.NewClock()}
	e.hub = hub.New(hub.Config{Members: e.chat, Registerer: e.reg})
	// Room events run on a fake clock (events_test.go moves it).
	e.events = roomevents.New(roomevents.Config{
		Rooms: e.chat, Seen: (*lazySeen)(e), Now: e.clock.Now, AfterFunc: e.clock.AfterFunc, Registerer: e.reg,
	})
	e.chat.sink = func(evs []parley.Event) { e.hub.Apply(evs); e.events.Apply(evs) }
	cfg.Chat, cfg.Hub, cfg.Registerer = e.chat, e.hub, e.reg
	if cfg.Events == nil {
		cfg.Events = e.events
		cfg.OnPresence = func(userID string) {
			e.events.PresenceChanged(userID)
			e.presenceCalls.Add(1)
		}
	}
	srv, err := New(cfg)
	if err != nil {
		t.Fatalf("new gateway: %v", err)
	}
	e.srv = srv
	mux := http.NewServeMux()
	mux.Handle("/ws", srv)
	e.http = httptest.NewServer(mux)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.tcpAddr = ln.Addr().String()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("serve: %v", err)
		}
		e.http.Close()
		e.hub.Close()
		e.events.Close()
	})
	return e
}

// transports are the two ways to reach the same session code.
var transports = []string{"websocket", "tcp"}

// client is one side of a STOMP conversation in a test.
type client struct {
	t    testing.TB
	conn net.Conn
	r    *stomp.Reader
}

// dialSmallBuffer connects over raw TCP with a 4 KiB receive buffer, so
// that the server's writes block soon after the client stops reading.
func (e *env) dialSmallBuffer(t testing.TB) *client {
	t.Helper()
	d := net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return nil
	}}
	conn, err := d.Dial("tcp", e.tcpAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &client{t: t, conn: conn, r: stomp.NewReader(conn, stomp.Limits{})}
}

// dial connects over the transport ("websocket" or "tcp").
func (e *env) dial(t testing.TB, transport string) *client {
	t.Helper()
	var conn net.Conn
	switch transport {
	case "websocket":
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		url := "ws" + strings.TrimPrefix(e.http.URL, "http") + "/ws"
		c, resp, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"v12.stomp", "v11.stomp"}})
		if err != nil {
			t.Fatalf("websocket dial: %v", err)
		}
		if p := resp.Header.Get("Sec-WebSocket-Protocol"); p != "v12.stomp" {
			t.Errorf("subprotocol = %q, want v12.stomp", p)
		}
		c.SetReadLimit(1 << 20)
		conn = websocket.NetConn(context.Background(), c, websocket.MessageText)
	case "tcp":
		var err error
		conn, err = net.Dial("tcp", e.tcpAddr)
		if err != nil {
			t.Fatalf("tcp dial: %v", err)
		}
	}
	t.Cleanup(func() { conn.Close() })
	return &client{t: t, conn: conn, r: stomp.NewReader(conn, stomp.Limits{MaxBody: 1 << 20, MaxFrame: 2 << 20})}
}

// send writes raw octets (over WebSocket: as one message).
func (c *client) send(raw string) {
	c.t.Helper()
	if _, err := c.conn.Write([]byte(raw)); err != nil {
		c.t.Fatalf("send %q: %v", raw, err)
	}
}

// read returns the next frame other than a heart-beat.
func (c *client) read() (*stomp.Frame, error) {
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		f, err := c.r.Read()
		if err != nil {
			return nil, err
		}
		if f.Command != stomp.Heartbeat {
			return f, nil
		}
	}
}

// expect reads the next frame and checks its command and the given
// "name:value" headers (a header given as "name" need only be present).
func (c *client) expect(cmd string, headers ...string) *stomp.Frame {
	c.t.Helper()
	f, err := c.read()
	if err != nil {
		c.t.Fatalf("expecting %s: %v", cmd, err)
	}
	return c.check(f, cmd, headers...)
}

// check checks f's command and headers as expect does, and returns f.
func (c *client) check(f *stomp.Frame, cmd string, headers ...string) *stomp.Frame {
	c.t.Helper()
	if f.Command.String() != cmd {
		c.t.Fatalf("got %v, want %s", f, cmd)
	}
	for _, h := range headers {
		name, want, hasValue := strings.Cut(h, ":")
		got, ok := f.Lookup(name)
		if !ok || hasValue && string(got) != want {
			c.t.Fatalf("got %v, want header %s", f, h)
		}
	}
	return f
}

// expectClosed checks that the server closes the connection.
func (c *client) expectClosed() {
	c.t.Helper()
	f, err := c.read()
	if err == nil {
		c.t.Fatalf("got %v, want the connection closed", f)
	}
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		c.t.Fatalf("the connection is still open")
	}
	if err != io.EOF && err != io.ErrUnexpectedEOF && !isClosedErr(err) {
		c.t.Logf("closed with %v", err)
	}
}

func isClosedErr(err error) bool {
	return errors.Is(err, net.ErrClosed) || websocket.CloseStatus(err) != -1
}

// connect sends CONNECT for user name and expects CONNECTED.
func (c *client) connect(name string) *stomp.Frame {
	c.t.Helper()
	c.send("CONNECT\naccept-version:1.2,1.1,1.0\nhost:parley\nAuthorization:Bearer token-" + name + "\nheart-beat:0,0\n\n\x00")
	return c.expect("CONNECTED", "version:1.2", "user-name:"+name, "session", "server", "heart-beat")
}

// frame builds a raw frame from a command, "name:value" headers and a body.
func frame(cmd string, body string, headers ...string) string {
	var b strings.Builder
	b.WriteString(cmd)
	b.WriteByte('\n')
	for _, h := range headers {
		b.WriteString(h)
		b.WriteByte('\n')
	}
	b.WriteByte('\n')
	b.WriteString(body)
	b.WriteByte(0)
	return b.String()
}
