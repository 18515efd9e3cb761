package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestHealthcheck runs `parley healthcheck` as the Dockerfile's
// HEALTHCHECK does: 0 against a serving node, 1 (Docker's "unhealthy")
// when nothing listens or the node answers 503, both within its timeout.
func TestHealthcheck(t *testing.T) {
	m := MustOpenMain(t)
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	nothing := closed.Addr().String()
	closed.Close()
	unready := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			http.Error(w, "store: down", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ok\n"))
	}))
	defer unready.Close()
	_, port, _ := net.SplitHostPort(m.Addr())
	for _, tc := range []struct {
		name string
		args []string
		code int
		out  string // in the output
	}{
		{"serving", []string{"--addr", m.Addr()}, 0, ""},
		{"ready", []string{"--addr", m.Addr(), "--ready"}, 0, ""},
		{"listen address", []string{"--addr", "0.0.0.0:" + port}, 0, ""}, // the container's PARLEY_ADDR
		{"nothing listening", []string{"--addr", nothing, "--timeout", "2s"}, 1, nothing},
		{"alive", []string{"--addr", strings.TrimPrefix(unready.URL, "http://")}, 0, ""},
		{"not ready", []string{"--addr", strings.TrimPrefix(unready.URL, "http://"), "--ready"}, 1, "503"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"healthcheck"}, tc.args...), &stdout, &stderr)
			if got := exitCode(err); got != tc.code {
				t.Errorf("parley healthcheck %q: exit %d (%v), want %d", tc.args, got, err, tc.code)
			}
			if tc.out != "" && (err == nil || !strings.Contains(err.Error(), tc.out)) {
				t.Errorf("parley healthcheck %q: %v, want an error naming %q", tc.args, err, tc.out)
			}
		})
	}
}
