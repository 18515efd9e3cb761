package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"parley/accept"
)

// TestHTTPReadTimeout: a client that sends a request body slowly is cut
// off once --http-read-timeout has passed since its request began, while
// a /ws session, opened before it, outlives it and still reads and writes.
func TestHTTPReadTimeout(t *testing.T) {
	const timeout = 250 * time.Millisecond
	m := MustOpenMain(t, func(c *Config) { c.HTTPReadTimeout, c.HTTPWriteTimeout = timeout, timeout })
	ann, _ := mustSignUp(t, m.Addr(), "ann")
	ws := dialStomp(t, m, "websocket", ann.token)

	// A valid sign-up of 60,000 bytes, sent 100 bytes every 10 ms: it
	// would take 6 s.
	tail := `","password":"correct horse"}`
	body := `{"name":"` + strings.Repeat("a", 60000-len(`{"name":"`)-len(tail)) + tail
	conn, err := net.Dial("tcp", m.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /api/users HTTP/1.1\r\nHost: parley\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
	ended := make(chan string, 1) // how the request ended: a status, or the error of the close
	go func() {
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			ended <- err.Error()
			return
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		ended <- resp.Status + " " + string(b)
	}()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	sent := 0
	var outcome string
send:
	for sent < len(body) {
		select {
		case outcome = <-ended:
			break send
		case <-tick.C:
			n, err := conn.Write([]byte(body[sent:min(sent+100, len(body))]))
			sent += n
			if err != nil { // the server closed the connection
				outcome = <-ended
				break send
			}
		}
	}
	if sent == len(body) {
		t.Errorf("the server read the whole %d-byte body, sent over %v, and answered %s; want it cut off after %v", len(body), time.Duration(len(body)/100)*10*time.Millisecond, <-ended, timeout)
	} else {
		t.Logf("cut off after %d of %d bytes: %s", sent, len(body), outcome)
	}

	// The /ws session began before the slow request: its read and write
	// deadlines, had the HTTP server's stayed on it, would have passed.
	ws.send("SUBSCRIBE\nid:0\ndestination:/user/queue/messages\nreceipt:r\n\n\x00")
	ws.expect("RECEIPT", "receipt-id:r")
}

// TestHTTPWriteTimeout: a response the client does not read is given up
// once --http-write-timeout has passed, instead of holding its goroutine
// and descriptor for ever.
func TestHTTPWriteTimeout(t *testing.T) {
	const timeout = 250 * time.Millisecond
	wrote := make(chan error, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		chunk := make([]byte, 64<<10)
		for {
			if _, err := w.Write(chunk); err != nil {
				wrote <- err
				return
			}
		}
	})
	cfg := Config{HTTPWriteTimeout: timeout}
	srv := newHTTPServer(cfg, handler)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	sw := newSweeper(cfg) // as listen serves it: the sweeps enforce the timeout
	defer sw.Close()
	go srv.Serve(accept.New(ln, accept.Config{Sweeper: sw}))
	defer srv.Close()

	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /big HTTP/1.1\r\nHost: parley\r\n\r\n") // and never read
	select {
	case err := <-wrote:
		if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
			t.Errorf("write to a client that does not read: %v, want a timeout", err)
		}
	case <-time.After(30 * time.Second):
		t.Errorf("write to a client that does not read still blocked after 30 s, want it given up after %v", timeout)
	}
}

// TestHardeningFlagDefaults: the defaults docs/configuration.md documents for the HTTP
// timeouts and the metrics address.
func TestHardeningFlagDefaults(t *testing.T) {
	var c Config
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	c.flags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		flag      string
		got, want any
	}{
		{"http-read-timeout", c.HTTPReadTimeout, 10 * time.Second},
		{"http-write-timeout", c.HTTPWriteTimeout, 30 * time.Second},
		{"metrics-addr", c.MetricsAddr, ""},
	} {
		if tc.got != tc.want {
			t.Errorf("--%s default = %v, want %v", tc.flag, tc.got, tc.want)
		}
	}
}
