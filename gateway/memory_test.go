package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BenchmarkIdleConnections measures the memory of idle, authenticated,
// subscribed WebSocket sessions: the growth of this process's RSS (after a
// GC that returns freed memory to the OS) over PARLEY_BENCH_CONNS
// connections (default 1,000), opened by a separate client process so that
// only the server side is counted. It runs once whatever b.N is.
//
//	PARLEY_BENCH_CONNS=10000 go test -run '^$' -bench IdleConnections -benchtime 1x ./gateway/
func BenchmarkIdleConnections(b *testing.B) {
	n := 1000
	if s := os.Getenv("PARLEY_BENCH_CONNS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	// Every session is alice's: lift the per-user and node caps.
	e := newEnv(b, Config{MaxConnsPerUser: n, MaxConns: n + 1})
	alice := e.chat.addUser("alice")
	e.chat.addRoom("r1", alice)

	rss0, heap0 := settledMemory()
	cmd := exec.Command(os.Args[0], "-test.run=^TestIdleClients$")
	cmd.Env = append(os.Environ(), "PARLEY_IDLE_CLIENTS="+strings.TrimPrefix(e.http.URL, "http://")+","+strconv.Itoa(n))
	out, _ := cmd.StdoutPipe()
	stdin, _ := cmd.StdinPipe()
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { stdin.Close(); cmd.Wait() }()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "ready") {
		b.Fatalf("client process: %q, %v", line, err)
	}
	rss1, heap1 := settledMemory()
	e.srv.mu.Lock()
	open := len(e.srv.sessions)
	e.srv.mu.Unlock()
	if open != n {
		b.Fatalf("%d sessions open, want %d", open, n)
	}
	b.ReportMetric(float64(rss1-rss0)/float64(n), "rss-bytes/conn")
	b.ReportMetric(float64(heap1-heap0)/float64(n), "heap-bytes/conn")
	b.ReportMetric(float64(runtime.NumGoroutine()), "goroutines")
}

// settledMemory returns the RSS and the Go heap+stack in use after a GC
// that gives freed pages back to the OS.
func settledMemory() (rss, inuse int64) {
	time.Sleep(500 * time.Millisecond)
	runtime.GC()
	debug.FreeOSMemory()
	data, _ := os.ReadFile("/proc/self/statm")
	f := strings.Fields(string(data))
	pages, _ := strconv.ParseInt(f[1], 10, 64)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return pages * int64(os.Getpagesize()), int64(ms.HeapInuse + ms.StackInuse)
}

// TestIdleClients is the client process of BenchmarkIdleConnections: it
// opens the connections, connects and subscribes each, says "ready" and
// holds them until its stdin closes. It skips unless started by the
// benchmark.
func TestIdleClients(t *testing.T) {
	spec := os.Getenv("PARLEY_IDLE_CLIENTS")
	if spec == "" {
		t.Skip("the client process of BenchmarkIdleConnections")
	}
	addr, ns, _ := strings.Cut(spec, ",")
	n, _ := strconv.Atoi(ns)
	conns := make([]net.Conn, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				c, err := idleClient(addr)
				if err != nil {
					errs <- fmt.Errorf("client %d: %w", i, err)
					return
				}
				conns[i] = c
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	fmt.Println("ready")
	io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
}

// idleClient opens a WebSocket STOMP session with a hand-written client,
// connects and subscribes, and returns it once the RECEIPT is in.
func idleClient(addr string) (net.Conn, error) {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"+
		"Sec-WebSocket-Protocol: v12.stomp\r\n\r\n", addr)
	br := bufio.NewReader(c)
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			c.Close()
			return nil, err
		}
		if line == "\r\n" {
			break
		}
	}
	c.Write(maskedText(frame("CONNECT", "", "accept-version:1.2", "passcode:token-alice", "heart-beat:0,0")))
	c.Write(maskedText(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1", "receipt:r")))
	// CONNECTED and RECEIPT: two NULs.
	for nuls := 0; nuls < 2; {
		b, err := br.ReadByte()
		if err != nil {
			c.Close()
			return nil, err
		}
		if b == 0 {
			nuls++
		}
	}
	return c, nil
}

// maskedText is a client text frame with a zero masking key.
func maskedText(payload string) []byte {
	var b bytes.Buffer
	b.WriteByte(0x81)
	switch n := len(payload); {
	case n < 126:
		b.WriteByte(0x80 | byte(n))
	default:
		b.Write([]byte{0x80 | 126, byte(n >> 8), byte(n)})
	}
	b.Write([]byte{0, 0, 0, 0})
	b.WriteString(payload)
	return b.Bytes()
}
