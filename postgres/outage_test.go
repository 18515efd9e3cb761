package postgres_test

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/postgres"
	"parley/postgres/pgtest"
)

// forwarder is a TCP proxy in front of PostgreSQL that a test can cut (its
// listener and every connection closed, so that new connections are
// refused, as during a stop) and restore on the same address.
type forwarder struct {
	t      *testing.T
	target string
	addr   string

	mu    sync.Mutex // guards the following fields
	ln    net.Listener
	conns []net.Conn
	wg    sync.WaitGroup
}

func newForwarder(t *testing.T, target string) *forwarder {
	f := &forwarder{t: t, target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	f.addr = ln.Addr().String()
	f.serve(ln)
	t.Cleanup(func() { f.cut(); f.wg.Wait() })
	return f
}

func (f *forwarder) serve(ln net.Listener) {
	f.mu.Lock()
	f.ln = ln
	f.mu.Unlock()
	f.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", f.target)
			if err != nil {
				c.Close()
				continue
			}
			f.mu.Lock()
			f.conns = append(f.conns, c, up)
			f.mu.Unlock()
			f.wg.Go(func() { io.Copy(up, c); up.Close(); c.Close() })
			f.wg.Go(func() { io.Copy(c, up); up.Close(); c.Close() })
		}
	})
}

// cut closes the listener and every connection.
func (f *forwarder) cut() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.ln != nil {
		f.ln.Close()
		f.ln = nil
	}
	for _, c := range f.conns {
		c.Close()
	}
	f.conns = nil
}

// restore listens again on the same address.
func (f *forwarder) restore() {
	ln, err := net.Listen("tcp", f.addr)
	if err != nil {
		f.t.Fatalf("listen again on %s: %v", f.addr, err)
	}
	f.serve(ln)
}

// logCounter counts the log records by message.
type logCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (l *logCounter) Enabled(context.Context, slog.Level) bool { return true }
func (l *logCounter) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.n[r.Message]++
	return nil
}
func (l *logCounter) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logCounter) WithGroup(string) slog.Handler      { return l }

func (l *logCounter) count(prefix string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for msg, c := range l.n {
		if strings.HasPrefix(msg, prefix) {
			n += c
		}
	}
	return n
}

// TestStoreOutageIsUnavailable: while the connection to PostgreSQL is cut,
// sends and reads fail with CodeUnavailable, a send's message telling the
// client to send again with its client-id; the outage is logged once and
// its end once; and the store serves again by itself.
func TestStoreOutageIsUnavailable(t *testing.T) {
	u, err := url.Parse(pgtest.Schema(t))
	if err != nil {
		t.Fatal(err)
	}
	fw := newForwarder(t, u.Host)
	u.Host = fw.addr
	logs := &logCounter{n: map[string]int{}}
	s := mustOpen(t, postgres.Config{URL: u.String(), WriteTimeout: 2 * time.Second, Logger: slog.New(logs)})
	ctx := context.Background()
	user, err := s.CreateUser(ctx, parley.NewUser{Name: "ann", PasswordHash: []byte("x")})
	if err != nil {
		t.Fatal(err)
	}
	room, _, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindGroup, Title: "r", CreatorID: user.ID})
	if err != nil {
		t.Fatal(err)
	}
	send := func(clientID string) error {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_, _, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: user.ID, Body: "hi", ClientID: clientID})
		return err
	}
	if err := send("before"); err != nil {
		t.Fatalf("send before the outage: %v", err)
	}

	fw.cut()
	for i := range 5 {
		err := send("during")
		if code := parley.ErrorCode(err); code != parley.CodeUnavailable {
			t.Errorf("send %d during the outage: code %q (%v), want %q", i, code, err, parley.CodeUnavailable)
		}
		if msg := parley.ErrorMessage(err); !strings.Contains(msg, "send again with the same client-id") {
			t.Errorf("send %d during the outage: message %q, want it to say to send again with the same client-id", i, msg)
		}
	}
	_, err = s.Messages(ctx, room.ID, parley.Page{After: 0, Limit: 10})
	if code := parley.ErrorCode(err); code != parley.CodeUnavailable {
		t.Errorf("read during the outage: code %q (%v), want %q", code, err, parley.CodeUnavailable)
	}
	if got := logs.count("postgres: store unreachable"); got != 1 {
		t.Errorf("%d outage log lines for one outage, want 1", got)
	}

	fw.restore()
	var last error
	for range 100 { // the pool dials again on its own; the first tries may still fail
		if last = send("after"); last == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if last != nil {
		t.Fatalf("send after the outage: %v", last)
	}
	if got := logs.count("postgres: store reachable again"); got != 1 {
		t.Errorf("%d end-of-outage log lines, want 1", got)
	}
	if got := logs.count("postgres: store unreachable"); got != 1 {
		t.Errorf("%d outage log lines in all, want 1", got)
	}
}
