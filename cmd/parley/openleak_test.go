package main

import (
	"context"
	"net"
	"runtime"
	"strings"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley/parleytest"
	"parley/servicetest"
)

// TestOpenFailureClosesRedis: when a cluster node's Open fails after it
// dialled Redis, Close closes the Redis client: the node's connections to
// Redis end, whichever later step failed, before or after the cluster
// node took the client over.
func TestOpenFailureClosesRedis(t *testing.T) {
	env := needCluster(t)
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := busy.Addr().String()
	tests := []struct {
		name string
		bad  func(*Config)
	}{
		{"login device key too short", func(c *Config) { c.LoginDeviceKey = "short" }},
		{"broker URL unusable", func(c *Config) { c.Broker = "amqp://127.0.0.1:notaport/" }},
		// After the cluster node took the client over.
		{"listen address taken", func(c *Config) { c.Addr = taken }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// A Redis of each case's own: one case's leak is not
			// counted in the next.
			srv := servicetest.StartRedis(t)
			env := env
			env.redis = srv.URL()
			opt, err := goredis.ParseURL(srv.URL())
			if err != nil {
				t.Fatal(err)
			}
			admin := goredis.NewClient(opt)
			defer admin.Close()
			m := &Main{Config: clusterConfig(t, env, "leak")}
			tc.bad(&m.Config)
			if err := m.Open(context.Background()); err == nil {
				m.Close(context.Background())
				t.Fatal("Open() succeeded, want an error")
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := m.Close(ctx); err != nil {
				t.Logf("Close() after the failed Open: %v", err)
			}
			var n int
			if !parleytest.Poll(10*time.Second, func() bool {
				var err error
				if n, err = otherClients(admin); err != nil {
					t.Fatal(err)
				}
				return n == 0
			}) {
				t.Fatalf("%d connections to Redis still open 10 s after Close of a node whose Open failed", n)
			}
			// A leaked client's sockets are closed when the garbage
			// collector frees them: m holds the client until here, so
			// that only Close can end its connections.
			runtime.KeepAlive(m)
		})
	}
}

// otherClients counts the connections to the Redis of admin but admin's
// own.
func otherClients(admin *goredis.Client) (int, error) {
	list, err := admin.ClientList(context.Background()).Result()
	if err != nil {
		return 0, err
	}
	n := 0
	for line := range strings.Lines(list) {
		if strings.TrimSpace(line) != "" && !strings.Contains(line, "cmd=client") {
			n++
		}
	}
	return n, nil
}
