package gateway

import (
	"net"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"parley/stomp"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// slowRecvBuf is the receive buffer of the client that stops reading, set
// so that the kernel does not grow it: what it can hold is known.
const slowRecvBuf = 128 << 10

// dialFixedBuffer connects to addr with a receive buffer of slowRecvBuf.
func dialFixedBuffer(t *testing.T, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, slowRecvBuf) })
		return nil
	}}
	conn, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// stompOverRawWS is the STOMP byte stream of a rawWS's text messages.
type stompOverRawWS struct {
	w   *rawWS
	buf []byte
}

func (s *stompOverRawWS) Read(p []byte) (int, error) {
	for len(s.buf) == 0 {
		payload, op, err := s.w.next()
		if err != nil {
			return 0, err
		}
		switch op {
		case 0x1:
			s.buf = payload
		case 0x8:
			return 0, net.ErrClosed
		}
	}
	n := copy(p, s.buf)
	s.buf = s.buf[n:]
	return n, nil
}

// TestSlowConsumerBoundedByKernel reproduces issue 11 defect 5: a
// subscriber that stops reading, with nothing making its own receive
// buffer small, is found by the queue bound (ERROR slow consumer) after a
// bounded number of messages, because the server bounds what its kernel
// holds per connection (SendBuffer); the subscribers that read miss
// nothing. Every step is in lockstep with the readers: no sleep.
func TestSlowConsumerBoundedByKernel(t *testing.T) {
	const queue, body = 64, 1000
	cfg := Config{QueueFrames: queue, WriteTimeout: time.Minute}
	forEachTransport(t, cfg, func(t *testing.T, e *env, tr string) {
		users := make([]string, 4)
		for i := range users {
			users[i] = "user" + strconv.Itoa(i)
			e.chat.addUser(users[i])
		}
		carol := e.chat.addUser("carol")
		e.chat.mu.Lock()
		e.chat.members["r1"] = map[string]bool{carol.ID: true}
		for _, u := range users {
			e.chat.members["r1"]["u-"+u] = true
		}
		e.chat.mu.Unlock()

		var fast []*client
		for i, u := range users[:3] {
			c := e.dial(t, transports[i%2])
			c.connect(u)
			c.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1", "receipt:s"))
			c.expect("RECEIPT")
			fast = append(fast, c)
		}
		var slow *client
		switch tr {
		case "tcp":
			conn := dialFixedBuffer(t, e.tcpAddr)
			slow = &client{t: t, conn: conn, r: stomp.NewReader(conn, stomp.Limits{})}
		case "websocket":
			w := e.dialRawWSConn(t, dialFixedBuffer(t, strings.TrimPrefix(e.http.URL, "http://")))
			slow = &client{t: t, conn: &wsWriteConn{w: w}, r: stomp.NewReader(&stompOverRawWS{w: w}, stomp.Limits{})}
		}
		slow.connect(users[3])
		slow.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1", "receipt:s"))
		slow.expect("RECEIPT")

		text := strings.Repeat("x", body)
		seq := 0
		send := func() {
			t.Helper()
			if _, _, err := e.chat.Send(t.Context(), carol, "r1", text, ""); err != nil {
				t.Fatal(err)
			}
			seq++
			for _, c := range fast {
				c.expect("MESSAGE", "seq:"+strconv.Itoa(seq))
			}
		}
		// Steady load that every subscriber reads...
		for range 50 {
			send()
			slow.expect("MESSAGE", "seq:"+strconv.Itoa(seq))
		}
		// ...until one stops reading. Past the queue, the frames held
		// are those of the batch the writer is blocked on (at most a
		// queue's worth) and the kernel's: at most twice each socket
		// buffer (Linux doubles what is set) on each side.
		closes := e.srv.m.slowConsumer.WithLabelValues(reasonQueueFrames)
		bound := seq + 2*queue + (2*e.srv.cfg.SendBuffer+2*slowRecvBuf)/body
		for testutil.ToFloat64(closes) == 0 {
			if seq > bound {
				t.Fatalf("the subscriber that stopped reading is not closed after %d messages, want at most %d", seq, bound)
			}
			send()
		}
		t.Logf("closed as a slow consumer at seq %d (bound %d)", seq, bound)
		for range 10 {
			send()
		}

		// It reads again: an unbroken prefix of the stream, then ERROR.
		want := 51
		for {
			slow.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			f, err := slow.r.Read()
			if err != nil {
				t.Fatalf("slow client: %v after seq %d, want ERROR", err, want-1)
			}
			if f.Command == stomp.Heartbeat {
				continue
			}
			if f.Command == stomp.Error {
				if string(f.Get("message")) != "slow consumer" {
					t.Errorf("got %v, want message:slow consumer", f)
				}
				break
			}
			if got := string(f.Get("seq")); got != strconv.Itoa(want) {
				t.Fatalf("slow client got seq %s, want %d", got, want)
			}
			want++
		}
	})
}

// wsWriteConn sends a rawWS's writes as masked text frames; reads go
// through stompOverRawWS.
type wsWriteConn struct {
	net.Conn
	w *rawWS
}

func (c *wsWriteConn) Write(p []byte) (int, error) {
	_, err := c.w.c.Write(wsFrame(true, 0x1, string(p)))
	return len(p), err
}

func (c *wsWriteConn) SetReadDeadline(t time.Time) error { return c.w.c.SetReadDeadline(t) }
func (c *wsWriteConn) Close() error                      { return c.w.c.Close() }
