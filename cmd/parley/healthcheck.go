package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"time"
)

const healthcheckUsage = `usage: parley healthcheck [flags]

Asks the node on --addr for GET /healthz (the process serves) or, with
--ready, GET /readyz (its store, broker and cache answer too), and exits
0 when it answers 200, 1 otherwise: the exit codes of a Docker
HEALTHCHECK, which needs no shell in the image to run it. A listen
address on every interface (0.0.0.0:8080, :8080) is asked on loopback.

`

// unhealthyError is a failed health check: the process exits 1, which a
// Docker HEALTHCHECK reads as "unhealthy" (2 is reserved there).
type unhealthyError struct{ err error }

func (e unhealthyError) Error() string { return e.err.Error() }
func (e unhealthyError) Unwrap() error { return e.err }

// runHealthcheck is the healthcheck command.
func runHealthcheck(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var (
		addr    string
		ready   bool
		timeout time.Duration
	)
	fs := flag.NewFlagSet("parley healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&addr, "addr", "127.0.0.1:8080", "the node's HTTP listen address, as given to parley serve")
	fs.BoolVar(&ready, "ready", false, "ask /readyz (the node and its dependencies) instead of /healthz (the node)")
	fs.DurationVar(&timeout, "timeout", 3*time.Second, "give up after this long")
	setUsage(fs, stderr, healthcheckUsage)
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return err
	}
	path := "/healthz"
	if ready {
		path = "/readyz"
	}
	url := "http://" + dialAddr(addr) + path
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return unhealthyError{fmt.Errorf("healthcheck: %w", err)}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
	if resp.StatusCode != http.StatusOK {
		return unhealthyError{fmt.Errorf("healthcheck: GET %s: %s: %s", url, resp.Status, body)}
	}
	fmt.Fprintf(stdout, "GET %s: %s\n", url, resp.Status)
	return nil
}

// dialAddr is the address to reach a server listening on addr: a listen
// address on every interface is reached on loopback.
func dialAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// isUnhealthy reports whether err is a failed health check.
func isUnhealthy(err error) bool {
	var u unhealthyError
	return errors.As(err, &u)
}
