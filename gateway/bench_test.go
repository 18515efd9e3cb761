package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"parley"
	"parley/stomp"
)

// BenchmarkFanOut delivers messages to one room with 1,000 subscribed
// sessions on real loopback TCP sockets, through the hub's event sink as
// the store calls it. One op is one message, so 1,000 deliveries; the
// publisher keeps at most a window of messages in flight.
//
//	go test -run '^$' -bench FanOut -benchmem ./gateway/
func BenchmarkFanOut(b *testing.B) {
	for _, transport := range benchTransports {
		b.Run(transport, func(b *testing.B) { benchFanOut(b, transport, 1000, 32) })
	}
}

// BenchmarkFanOutPaced is BenchmarkFanOut with one message in flight: every
// session has one frame to write at a time, as in a big room whose sessions
// each get a message every few tens of milliseconds, so it measures what
// one wake-up and one socket write cost per delivery. cpu-ns/delivery is
// the process's CPU time (getrusage: the server and the counting clients,
// whose share does not change with the server's code) per delivery.
//
//	go test -run '^$' -bench FanOutPaced -benchmem ./gateway/
func BenchmarkFanOutPaced(b *testing.B) {
	for _, transport := range benchTransports {
		b.Run(transport, func(b *testing.B) { benchFanOut(b, transport, 1000, 1) })
	}
}

// benchTransports are the transports, and WebSocket with several STOMP
// frames per WebSocket frame (Config.PackWebSocket).
var benchTransports = append(transports, "websocket-packed")

// cpuTime is the CPU time, user and system, this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func benchFanOut(b *testing.B, transport string, sessions, window int) {
	// Every session is alice's: lift the per-user cap.
	// Quiet: a line per session would land amid the benchmark's output.
	quiet := slog.New(slog.DiscardHandler)
	e := newEnv(b, Config{
		QueueFrames: 4096, QueueBytes: 16 << 20, MaxConnsPerUser: sessions, Logger: quiet,
		PackWebSocket: transport == "websocket-packed",
	})
	alice := e.chat.addUser("alice")
	e.chat.addRoom("r1", alice)
	cnt := newCounter()
	for i := range sessions {
		if strings.HasPrefix(transport, "websocket") {
			// A hand-written client that only counts frames, so that the
			// client side costs little of the machine.
			conn, err := idleClient(strings.TrimPrefix(e.http.URL, "http://"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { conn.Close() })
			go countWSFrames(conn, cnt)
			continue
		}
		c := e.dial(b, transport)
		c.connect("alice")
		c.send(frame("SUBSCRIBE", "", "id:"+fmt.Sprint(i), "destination:/topic/rooms.r1", "receipt:s"))
		c.expect("RECEIPT", "receipt-id:s")
		c.conn.SetReadDeadline(time.Time{})
		go countFrames(c.conn, cnt)
	}
	msg := parley.Message{
		ID: parley.NewID(), RoomID: "r1", SenderID: alice.ID, SenderName: alice.Name,
		Body: strings.Repeat("hello ", 20), SentAt: parley.Now(),
	}
	evs := []parley.Event{{Kind: parley.EventMessage, Room: parley.Room{ID: "r1"}}}
	// The publisher waits without spinning, so that the CPU time is the
	// deliveries' (counter.wait).
	wait := cnt.wait
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	start, cpu0 := time.Now(), cpuTime()
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	for i := range b.N {
		msg.Seq = int64(i + 1)
		evs[0].Message = msg
		e.hub.Apply(evs)
		if i >= window {
			wait(int64(i-window) * int64(sessions))
		}
	}
	wait(int64(b.N) * int64(sessions))
	elapsed, cpu := time.Since(start), cpuTime()-cpu0
	runtime.ReadMemStats(&m1)
	b.StopTimer()
	deliveries := float64(b.N) * float64(sessions)
	b.ReportMetric(deliveries/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/deliveries, "allocs/delivery")
	b.ReportMetric(float64(cpu.Nanoseconds())/deliveries, "cpu-ns/delivery")
}

// counter counts the frames the clients receive; wait blocks until it
// reaches a target.
type counter struct {
	n      atomic.Int64
	target atomic.Int64
	reach  chan struct{}
}

func newCounter() *counter { return &counter{reach: make(chan struct{}, 1)} }

// Add counts k frames and wakes wait once its target is reached.
func (c *counter) Add(k int64) {
	if c.n.Add(k) >= c.target.Load() {
		select {
		case c.reach <- struct{}{}:
		default:
		}
	}
}

// wait returns once n frames have been counted. One waiter at a time.
func (c *counter) wait(n int64) {
	c.target.Store(n)
	for c.n.Load() < n {
		<-c.reach
	}
}

// countFrames counts the NUL octets (one per STOMP frame) a client
// receives, allocating nothing.
func countFrames(conn net.Conn, n *counter) {
	buf := make([]byte, 64<<10)
	for {
		k, err := conn.Read(buf)
		if c := bytes.Count(buf[:k], []byte{0}); c > 0 {
			n.Add(int64(c))
		}
		if err != nil {
			return
		}
	}
}

// countWSFrames counts the STOMP frames (NUL octets of the payloads) a
// WebSocket client receives, however many share a WebSocket frame.
func countWSFrames(conn net.Conn, n *counter) {
	br := bufio.NewReaderSize(conn, 64<<10)
	var hdr [8]byte
	payload := make([]byte, 64<<10)
	for {
		if _, err := io.ReadFull(br, hdr[:2]); err != nil {
			return
		}
		size := int(hdr[1] & 0x7f)
		switch size {
		case 126:
			if _, err := io.ReadFull(br, hdr[:2]); err != nil {
				return
			}
			size = int(hdr[0])<<8 | int(hdr[1])
		case 127:
			if _, err := io.ReadFull(br, hdr[:8]); err != nil {
				return
			}
			size = 0
			for _, c := range hdr {
				size = size<<8 | int(c)
			}
		}
		for size > 0 {
			k, err := io.ReadFull(br, payload[:min(size, len(payload))])
			if c := bytes.Count(payload[:k], []byte{0}); c > 0 {
				n.Add(int64(c))
			}
			if err != nil {
				return
			}
			size -= k
		}
	}
}

// BenchmarkEncodeMessage measures the per-recipient cost of writing a
// prepared MESSAGE frame into a write buffer.
func BenchmarkEncodeMessage(b *testing.B) {
	m := &parley.Message{ID: parley.NewID(), RoomID: "r1", Seq: 42, SenderID: "u", SenderName: "alice", Body: "hello", SentAt: parley.Now()}
	e := prepareMessage(m, shapeOf(false, stomp.V12, false))
	buf := make([]byte, 0, 4096)
	b.ReportAllocs()
	for b.Loop() {
		buf, _ = e.p.Append(buf[:0], "sub-17")
	}
}

// BenchmarkWrite is one socket write of a MESSAGE-sized batch to a peer
// that reads everything: what every batch of every session costs besides
// the encoding, the system call included. polled is a socket the session
// can write without waiting (the path of every accepted connection);
// deadline is the path of a connection without one, which sets a write
// deadline for every write, as every write did before.
func BenchmarkWrite(b *testing.B) {
	for _, polled := range []bool{true, false} {
		name := "polled"
		if !polled {
			name = "deadline"
		}
		b.Run(name, func(b *testing.B) {
			s, peer := socketSession(b)
			if !polled {
				s.rc = nil
			}
			go io.Copy(io.Discard, peer)
			buf := []byte(strings.Repeat("x", 400))
			b.ReportAllocs()
			for b.Loop() {
				if err := s.write(buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
