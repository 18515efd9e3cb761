package gateway

import (
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley/loadgen"
)

// BenchmarkWriteCeiling is the floor of a big room's fan-out on this
// machine (issue 16, goal 2): no STOMP, no hub, no queues, only what every
// delivery must cost. One pass writes one buffer (-ceiling-bytes, two
// MESSAGE frames of a 100-byte body by default, as a session of the
// bigroom bench carries at 2-3 deliveries a write) to each of
// -ceiling-conns loopback TCP connections, from GOMAXPROCS writer
// goroutines sharing the sockets, as the gateway's writer pool does, and
// ends when a reader goroutine on the other end of each connection has
// read it. The readers are a client process of their own
// (TestWriteCeilingClient), on the same cores, as the load generator is in
// the bench. b.N is the number of passes.
//
// It reports the pass time (a session's wait for its next write once
// every session has something at every pass: the bigroom bench's 10,000
// members at 20 messages a second each do, for any pass longer than
// 50 ms), the wall time a write and the CPU a write of each process. Run
// it with
//
//	go test -run '^$' -bench WriteCeiling -benchtime 20x ./gateway/
func BenchmarkWriteCeiling(b *testing.B) {
	for _, n := range []int{1000, ceilingConns} {
		b.Run(fmt.Sprintf("conns=%d", n), func(b *testing.B) { benchmarkWriteCeiling(b, n) })
	}
}

var (
	ceilingConns = 10000
	ceilingBytes = 2 * 250
)

func init() {
	flag.IntVar(&ceilingConns, "ceiling-conns", ceilingConns, "BenchmarkWriteCeiling: connections of the big sub-benchmark")
	flag.IntVar(&ceilingBytes, "ceiling-bytes", ceilingBytes, "BenchmarkWriteCeiling: octets a write")
}

func benchmarkWriteCeiling(b *testing.B, n int) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWriteCeilingClient$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PARLEY_CEILING_CLIENT=%s,%d,%d", ln.Addr(), n, ceilingBytes))
	cmd.Stderr = os.Stderr // its "PASS" on standard output would land amid the results
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer cmd.Wait()
	// The client dials its control connection first, then the n others.
	conns := make([]net.Conn, 0, n+1)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	for len(conns) < n+1 {
		c, err := ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		conns = append(conns, c)
	}
	ctl, servers := conns[0], conns[1:]

	payload := make([]byte, ceilingBytes)
	workers := runtime.GOMAXPROCS(0)
	start := make([]chan struct{}, workers)
	var writers sync.WaitGroup
	for i := range workers {
		start[i] = make(chan struct{})
		writers.Add(1)
		go func() {
			defer writers.Done()
			for range start[i] {
				for j := i; j < n; j += workers {
					if _, err := servers[j].Write(payload); err != nil {
						b.Error(err)
						return
					}
				}
			}
		}()
	}
	defer func() {
		for _, s := range start {
			close(s)
		}
		writers.Wait()
	}()

	done := make([]byte, 1)
	cpu0, child0 := cpuTime(), loadgen.ProcessCPU(cmd.Process.Pid)
	b.ResetTimer()
	t0 := time.Now()
	for range b.N {
		for _, s := range start {
			s <- struct{}{}
		}
		if _, err := io.ReadFull(ctl, done); err != nil { // the client read the pass
			b.Fatal(err)
		}
	}
	elapsed := time.Since(t0)
	b.StopTimer()
	cpu, child := cpuTime()-cpu0, loadgen.ProcessCPU(cmd.Process.Pid)-child0
	writes := float64(b.N) * float64(n)
	b.ReportMetric(float64(elapsed.Microseconds())/1000/float64(b.N), "ms/pass")
	b.ReportMetric(float64(elapsed.Nanoseconds())/1000/writes, "µs/write")
	b.ReportMetric(float64(cpu.Nanoseconds())/1000/writes, "server-CPU-µs/write")
	b.ReportMetric(child*1e6/writes, "client-CPU-µs/write")
	b.ReportMetric(0, "ns/op")
}

// TestWriteCeilingClient is the client process of BenchmarkWriteCeiling:
// it dials the control connection and the others, reads each pass's
// octets on every connection, and writes a byte on the control
// connection once all of them have. It skips unless started by the
// benchmark, and returns when the benchmark closes its connections.
func TestWriteCeilingClient(t *testing.T) {
	env := os.Getenv("PARLEY_CEILING_CLIENT")
	if env == "" {
		t.Skip("the client process of BenchmarkWriteCeiling (PARLEY_CEILING_CLIENT unset)")
	}
	f := strings.Split(env, ",")
	n, _ := strconv.Atoi(f[1])
	size, _ := strconv.Atoi(f[2])
	ctl, err := net.Dial("tcp", f[0])
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	conns := make([]net.Conn, n)
	for i := range conns {
		if conns[i], err = net.Dial("tcp", f[0]); err != nil {
			t.Fatal(err)
		}
		defer conns[i].Close()
	}
	// A pass ends when every reader has read its octets; the count only
	// reaches zero once a pass, as the next one starts after the byte.
	var left atomic.Int64
	left.Store(int64(n))
	var readers sync.WaitGroup
	for _, c := range conns {
		readers.Add(1)
		go func() {
			defer readers.Done()
			buf := make([]byte, size)
			for {
				if _, err := io.ReadFull(c, buf); err != nil {
					return
				}
				if left.Add(-1) == 0 {
					left.Store(int64(n))
					if _, err := ctl.Write([]byte{1}); err != nil {
						return
					}
				}
			}
		}()
	}
	readers.Wait()
}
