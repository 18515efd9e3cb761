package main

import (
	"context"
	"errors"
	"net"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// hangingListener accepts connections and never answers, as a stopped
// (SIGSTOP) or black-holed server does; it returns its address.
func hangingListener(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	return ln.Addr().String()
}

// TestReadyzAnswersWhenADependencyHangs: /readyz answers at once with 503
// naming the dependency that hangs or fails, and ok for the others, even
// when a check ignores its context.
func TestReadyzAnswersWhenADependencyHangs(t *testing.T) {
	ok := func(context.Context) error { return nil }
	hung := goredis.NewClient(&goredis.Options{Addr: hangingListener(t)}) // its reads wait 3 s, ×4 tries, whatever the context
	t.Cleanup(func() { hung.Close() })
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	ignoresContext := func(context.Context) error { <-release; return nil }
	tests := []struct {
		name   string
		checks []readyCheck
		status int
		want   []string
	}{
		{"all ok", []readyCheck{{"store", ok}, {"broker", ok}, {"redis", ok}}, 200,
			[]string{"store: ok\n", "broker: ok\n", "redis: ok\n"}},
		{"redis accepts and never answers", []readyCheck{{"store", ok}, {"broker", ok},
			{"redis", func(ctx context.Context) error { return hung.Ping(ctx).Err() }}}, 503,
			[]string{"store: ok\n", "broker: ok\n", "redis: "}},
		{"a check ignores its context", []readyCheck{{"store", ignoresContext}, {"broker", ok}, {"redis", ok}}, 503,
			[]string{"store: no answer", "broker: ok\n", "redis: ok\n"}},
		{"store fails", []readyCheck{{"store", func(context.Context) error { return errors.New("connection refused") }},
			{"broker", ok}}, 503, []string{"store: connection refused\n", "broker: ok\n"}},
		{"store degraded (storage full)", []readyCheck{{"store", func(context.Context) error { return degraded("degraded: storage full since then") }},
			{"broker", ok}}, 200, []string{"store: degraded: storage full since then\n", "broker: ok\n"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			answered := make(chan struct{})
			go func() {
				defer close(answered)
				readyHandler(50*time.Millisecond, tc.checks).ServeHTTP(rec, httptest.NewRequest("GET", "/readyz", nil))
			}()
			// A bound for the test only: a handler that waited for a hung
			// check would answer after many seconds, or never.
			select {
			case <-answered:
			case <-time.After(10 * time.Second):
				t.Fatalf("/readyz did not answer within 10 s")
			}
			resp, body := rec.Result(), rec.Body.Bytes()
			if resp.StatusCode != tc.status {
				t.Errorf("/readyz status = %d, want %d (body %q)", resp.StatusCode, tc.status, body)
			}
			for _, want := range tc.want {
				if !strings.Contains(string(body), want) {
					t.Errorf("/readyz body = %q, want it to contain %q", body, want)
				}
			}
		})
	}
}
