package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestLoginLimitFlags checks the defaults of the sign-up and login flags
// and that a bad value is refused at start, naming its flag.
func TestLoginLimitFlags(t *testing.T) {
	var cfg Config
	fs := flag.NewFlagSet("parley serve", flag.ContinueOnError)
	cfg.flags(fs)
	if err := parseFlags(fs, nil, func(string) string { return "" }); err != nil {
		t.Fatalf("parseFlags() error = %v", err)
	}
	want := Config{SignupRate: 2, SignupBurst: 10, LoginNameFree: 5, LoginAddrFree: 20, LoginMaxWait: 15 * time.Minute}
	if cfg.SignupRate != want.SignupRate || cfg.SignupBurst != want.SignupBurst || cfg.LoginNameFree != want.LoginNameFree ||
		cfg.LoginAddrFree != want.LoginAddrFree || cfg.LoginMaxWait != want.LoginMaxWait || cfg.TrustedProxies != "" || cfg.LoginDeviceKey != "" {
		t.Errorf("defaults: %+v", cfg)
	}
	for _, tt := range []struct {
		name string
		set  func(*Config)
		flag string
	}{
		{"bad proxy", func(c *Config) { c.TrustedProxies = "10.0.0.0/8, proxy.local" }, "--trusted-proxies"},
		{"negative sign-up rate", func(c *Config) { c.SignupRate = -1 }, "--signup-rate"},
		{"no sign-up burst", func(c *Config) { c.SignupRate, c.SignupBurst = 1, 0 }, "--signup-burst"},
		{"negative wait", func(c *Config) { c.LoginMaxWait = -time.Second }, "--login-max-wait"},
		{"no free failures", func(c *Config) { c.LoginMaxWait, c.LoginNameFree, c.LoginAddrFree = time.Minute, 0, 5 }, "--login-name-failures"},
		{"short device key", func(c *Config) { c.LoginDeviceKey = "short" }, "--login-device-key"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			m := &Main{Config: Config{Addr: "127.0.0.1:0", Data: t.TempDir(), Sync: "normal", KDF: testKDF}}
			tt.set(&m.Config)
			err := m.Open(context.Background())
			m.Close(context.Background())
			if err == nil || !strings.Contains(err.Error(), tt.flag) {
				t.Errorf("Open() error = %v, want one naming %s", err, tt.flag)
			}
		})
	}
}

// TestLoginLimits: through a real node, wrong passwords for one name are
// answered 429 with Retry-After after the free ones, even with the right
// password, and sign-ups from one address stop at the burst.
func TestLoginLimits(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) {
		c.SignupRate, c.SignupBurst = 1, 2
		c.LoginNameFree, c.LoginAddrFree, c.LoginMaxWait = 2, 10, time.Minute
	})
	mustSignUp(t, m.Addr(), "alice")
	anon := newClient(t, m.Addr())
	for i, tt := range []struct {
		password string
		status   int
	}{
		{"wrong password", http.StatusUnauthorized},
		{"wrong password", http.StatusUnauthorized},
		{"correct horse", http.StatusTooManyRequests},
	} {
		resp := anon.post("/api/tokens", map[string]string{"name": "alice", "password": tt.password})
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("login %d = %d, want %d", i+1, resp.StatusCode, tt.status)
		}
		if tt.status == http.StatusTooManyRequests && resp.Header.Get("Retry-After") != "1" {
			t.Errorf("login %d: Retry-After %q, want 1", i+1, resp.Header.Get("Retry-After"))
		}
	}
	// mustSignUp took one sign-up of 127.0.0.1's burst of 2.
	for i, want := range []int{http.StatusCreated, http.StatusTooManyRequests} {
		resp := anon.post("/api/users", map[string]string{"name": "user" + string(rune('a'+i)), "password": "correct horse"})
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("sign-up %d = %d, want %d", i+2, resp.StatusCode, want)
		}
	}
	resp, err := http.Get("http://" + m.Addr() + "/metrics")
	if err != nil {
		t.Fatalf("GET /metrics: %v", err)
	}
	data, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("read /metrics: %v", err)
	}
	body := string(data)
	for _, line := range []string{`parley_http_limited_total{limit="login_name"} 1`, `parley_http_limited_total{limit="signup"} 1`} {
		if !strings.Contains(body, line) {
			t.Errorf("metrics lack %q", line)
		}
	}
}

// TestStompConnectionLimitFlags: the per-connection limits of
// --stomp-max-subscriptions and --stomp-max-headers reach the gateway.
func TestStompConnectionLimitFlags(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.StompMaxSubs, c.StompMaxHeaders = 2, 8 })
	alice, _ := mustSignUp(t, m.Addr(), "alice")

	sc := dialStomp(t, m, "websocket", alice.token)
	sc.send("SUBSCRIBE\nid:1\ndestination:/user/queue/messages\nreceipt:r1\n\n\x00")
	sc.expect("RECEIPT", "receipt-id:r1")
	sc.send("SUBSCRIBE\nid:2\ndestination:/user/queue/messages\nreceipt:r2\n\n\x00")
	sc.expect("RECEIPT", "receipt-id:r2")
	sc.send("SUBSCRIBE\nid:3\ndestination:/user/queue/messages\nreceipt:r3\n\n\x00")
	sc.expect("ERROR", "code:invalid")

	sc = dialStomp(t, m, "websocket", alice.token)
	var frame strings.Builder
	frame.WriteString("SEND\ndestination:/app/rooms.x\n")
	for i := range 8 {
		fmt.Fprintf(&frame, "x-%d:v\n", i)
	}
	frame.WriteString("\nhi\x00")
	sc.send(frame.String())
	sc.expect("ERROR", "code:too_large")
}

// TestClusterLoginLimits: in cluster mode a name's failed logins are
// counted in Redis, so a guesser spread over three nodes gets one budget,
// not three.
func TestClusterLoginLimits(t *testing.T) {
	env := needCluster(t)
	var nodes []*Main
	for _, name := range []string{"a", "b", "c"} {
		nodes = append(nodes, startNode(t, env, name, func(c *Config) {
			c.LoginNameFree, c.LoginAddrFree, c.LoginMaxWait = 2, 10, time.Minute
		}))
	}
	mustSignUp(t, nodes[0].Addr(), "alice")
	for i, tt := range []struct {
		node   *Main
		status int
	}{
		{nodes[0], http.StatusUnauthorized},
		{nodes[1], http.StatusUnauthorized},
		{nodes[2], http.StatusTooManyRequests}, // per node it would be the first failure
		{nodes[0], http.StatusTooManyRequests},
	} {
		resp := newClient(t, tt.node.Addr()).post("/api/tokens", map[string]string{"name": "alice", "password": "wrong password"})
		resp.Body.Close()
		if resp.StatusCode != tt.status {
			t.Errorf("login %d = %d, want %d", i+1, resp.StatusCode, tt.status)
		}
	}
}
