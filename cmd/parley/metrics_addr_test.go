package main

import (
	"io"
	"net/http"
	"strings"
	"testing"
)

// get returns the status and body of GET url.
func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsAddr: --metrics-addr moves /metrics off the public address
// (which then answers 404), alone or with pprof when --debug-addr is the
// same address; without it, /metrics stays on --addr.
func TestMetricsAddr(t *testing.T) {
	for _, tc := range []struct {
		name                   string
		metricsAddr, debugAddr string
		public                 bool // /metrics on --addr
		pprof                  bool // /debug/pprof/ at MetricsAddr
	}{
		{"default", "", "", true, false},
		{"own address", "127.0.0.1:0", "", false, false},
		{"with pprof", "127.0.0.1:0", "127.0.0.1:0", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := MustOpenMain(t, func(c *Config) { c.MetricsAddr, c.DebugAddr = tc.metricsAddr, tc.debugAddr })
			if got := m.MetricsAddr() == m.Addr(); got != tc.public {
				t.Errorf("MetricsAddr() = %s with Addr() %s, want them equal: %v", m.MetricsAddr(), m.Addr(), tc.public)
			}
			st, body := get(t, "http://"+m.Addr()+"/metrics")
			if got := st == http.StatusOK && strings.Contains(body, "parley_"); got != tc.public {
				t.Errorf("GET --addr /metrics = %d with %d bytes, want metrics there: %v", st, len(body), tc.public)
			}
			if !tc.public && st != http.StatusNotFound {
				t.Errorf("GET --addr /metrics = %d, want 404", st)
			}
			if st, body := get(t, "http://"+m.MetricsAddr()+"/metrics"); st != http.StatusOK || !strings.Contains(body, `parley_accept_errors_total{listener="http"}`) {
				t.Errorf("GET %s/metrics = %d %.80q, want the metrics", m.MetricsAddr(), st, body)
			}
			if st, _ := get(t, "http://"+m.MetricsAddr()+"/debug/pprof/cmdline"); (st == http.StatusOK) != tc.pprof {
				t.Errorf("GET %s/debug/pprof/cmdline = %d, want pprof there: %v", m.MetricsAddr(), st, tc.pprof)
			}
			if !tc.public {
				if st, _ := get(t, "http://"+m.Addr()+"/debug/pprof/cmdline"); st != http.StatusNotFound {
					t.Errorf("GET --addr /debug/pprof/cmdline = %d, want 404", st)
				}
			}
		})
	}
}
