package gateway

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
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
	for _, transport := range transports {
		b.Run(transport, func(b *testing.B) { benchFanOut(b, transport, 1000) })
	}
}

func benchFanOut(b *testing.B, transport string, sessions int) {
	// Every session is alice's: lift the per-user cap.
	e := newEnv(b, Config{QueueFrames: 4096, QueueBytes: 16 << 20, MaxConnsPerUser: sessions})
	alice := e.chat.addUser("alice")
	e.chat.addRoom("r1", alice)
	var received atomic.Int64
	for i := range sessions {
		if transport == "websocket" {
			// A hand-written client that only counts frames, so that the
			// client side costs little of the machine.
			conn, err := idleClient(strings.TrimPrefix(e.http.URL, "http://"))
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { conn.Close() })
			go countWSFrames(conn, &received)
			continue
		}
		c := e.dial(b, transport)
		c.connect("alice")
		c.send(frame("SUBSCRIBE", "", "id:"+fmt.Sprint(i), "destination:/topic/rooms.r1", "receipt:s"))
		c.expect("RECEIPT", "receipt-id:s")
		c.conn.SetReadDeadline(time.Time{})
		go countFrames(c.conn, &received)
	}
	msg := parley.Message{
		ID: parley.NewID(), RoomID: "r1", SenderID: alice.ID, SenderName: alice.Name,
		Body: strings.Repeat("hello ", 20), SentAt: parley.Now(),
	}
	evs := []parley.Event{{Kind: parley.EventMessage, Room: parley.Room{ID: "r1"}}}
	const window = 32
	wait := func(n int64) {
		for received.Load() < n {
			runtime.Gosched()
		}
	}
	runtime.GC()
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
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
	elapsed := time.Since(start)
	runtime.ReadMemStats(&m1)
	b.StopTimer()
	deliveries := float64(b.N) * float64(sessions)
	b.ReportMetric(deliveries/elapsed.Seconds(), "deliveries/s")
	b.ReportMetric(float64(m1.Mallocs-m0.Mallocs)/deliveries, "allocs/delivery")
}

// countFrames counts the NUL octets (one per STOMP frame) a client
// receives, allocating nothing.
func countFrames(conn net.Conn, n *atomic.Int64) {
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

// countWSFrames counts the WebSocket frames a client receives.
func countWSFrames(conn net.Conn, n *atomic.Int64) {
	br := bufio.NewReaderSize(conn, 64<<10)
	var hdr [8]byte
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
		if _, err := br.Discard(size); err != nil {
			return
		}
		n.Add(1)
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
