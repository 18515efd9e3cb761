package main

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"parley/stomp"
)

// setOpenFiles sets the soft limit of open descriptors (RLIMIT_NOFILE) of
// the process pid to n, keeping its hard limit.
func setOpenFiles(pid, n int) error {
	type rlimit64 struct{ cur, max uint64 }
	var old rlimit64
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_NOFILE, 0, uintptr(unsafe.Pointer(&old)), 0, 0); e != 0 {
		return fmt.Errorf("prlimit %d: %w", pid, e)
	}
	lim := rlimit64{cur: uint64(n), max: old.max}
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_NOFILE, uintptr(unsafe.Pointer(&lim)), 0, 0, 0); e != 0 {
		return fmt.Errorf("prlimit %d: %w", pid, e)
	}
	return nil
}

// openFiles counts the descriptors the process pid has open.
func openFiles(t *testing.T, pid int) int {
	t.Helper()
	fds, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	if err != nil {
		t.Fatalf("open files: %v", err)
	}
	return len(fds)
}

// TestAcceptAfterDescriptorsRunOut runs a server whose descriptor limit is
// reached by idle connections, on the HTTP and the raw STOMP port. Each
// listener logs that accept failed (once per burst) and counts it; once
// the connections close, both ports answer again.
func TestAcceptAfterDescriptorsRunOut(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a server process")
	}
	p := startServeProcess(t, "--data", t.TempDir(), "--sync", "normal", "--stomp-addr", "127.0.0.1:0")
	if p.stompAddr == "" {
		t.Fatalf("no STOMP address logged: %s", p.lines())
	}
	creds := map[string]string{"name": "ann", "password": "correct horse"}
	ann := newClient(t, p.addr)
	if st := ann.do("POST", "/api/users", creds, nil); st != http.StatusCreated {
		t.Fatalf("sign up: %d", st)
	}
	pid := p.cmd.Process.Pid
	limit := openFiles(t, pid) + 8
	if err := setOpenFiles(pid, limit); err != nil {
		t.Fatal(err)
	}

	// More idle connections than the server has descriptors left: the
	// kernel queues the rest, and accepting one fails.
	var conns []net.Conn
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	dial := func(addr string, n int) {
		for range n {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatalf("dial %s: %v", addr, err)
			}
			conns = append(conns, c)
		}
	}
	dial(p.stompAddr, 64)
	logged := func(listener string) {
		t.Helper()
		re := regexp.MustCompile(`accept failed.* listener=` + listener + ` .*too many open files`)
		if _, ok := p.waitLog(re, 30*time.Second); !ok {
			t.Errorf("no accept failure logged for %s: %s", listener, p.lines())
		}
	}
	logged("stomp")
	dial(p.addr, 4)
	logged("http")
	for _, c := range conns {
		c.Close()
	}
	conns = nil

	// Both ports serve again, with the store behind them.
	hc := &http.Client{Timeout: 30 * time.Second}
	resp, err := hc.Post("http://"+p.addr+"/api/tokens", "application/json", jsonReader(creds))
	if err != nil {
		t.Fatalf("HTTP after the descriptors came back: %v", err)
	}
	var tok struct{ Token string }
	err = decodeJSON(resp.Body, &tok)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || err != nil {
		t.Fatalf("log in after the descriptors came back: %d %v", resp.StatusCode, err)
	}
	c, err := net.Dial("tcp", p.stompAddr)
	if err != nil {
		t.Fatalf("dial STOMP: %v", err)
	}
	defer c.Close()
	fmt.Fprintf(c, "CONNECT\naccept-version:1.2\nhost:parley\nAuthorization:Bearer %s\n\n\x00", tok.Token)
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	if f, err := stomp.NewReader(c, stomp.Limits{}).Read(); err != nil || f.Command != stomp.Connected {
		t.Errorf("STOMP CONNECT after the descriptors came back = %v, %v; want CONNECTED", f, err)
	}

	for _, listener := range []string{"http", "stomp"} {
		if got := acceptErrors(t, hc, p.addr, listener); got < 1 {
			t.Errorf("parley_accept_errors_total{listener=%q} = %v, want at least 1", listener, got)
		}
	}
}

// acceptErrors reads parley_accept_errors_total of one listener from the
// /metrics of the server at addr.
func acceptErrors(t *testing.T, hc *http.Client, addr, listener string) float64 {
	t.Helper()
	resp, err := hc.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	prefix := `parley_accept_errors_total{listener="` + listener + `"} `
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), prefix); ok {
			f, _ := strconv.ParseFloat(v, 64)
			return f
		}
	}
	return 0
}
