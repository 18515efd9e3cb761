package gateway

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/stomp"
)

// frameTimeout is the frame timeout of the tests below, and heartBeat the
// interval of the server's heart-beats, which they use as the gateway's
// clock (afterBeats): a heart-beat is queued at most once per tick of the
// session's timer, every heartBeat/2.
const (
	frameTimeout = 300 * time.Millisecond
	heartBeat    = frameTimeout / 4
)

// frameTimeCase is a way the session reads its socket: through the
// poller, or blocking on a goroutine of its own (a socket the poller
// cannot watch, or a platform without epoll).
type frameTimeCase struct {
	name     string
	blocking bool
}

var frameTimeCases = []frameTimeCase{{"poller", false}, {"blocking", true}}

// forEachReadPath runs f on a gateway with the frame timeout of the tests
// below, once for each transport and read path, with alice connected on c
// (heart-beats from the server every heartBeat) and the store holding
// every SEND until hold's release is called (hold.entered says when one
// waits).
func forEachReadPath(t *testing.T, f func(t *testing.T, e *env, c *client, hold *storeHold)) {
	cfg := Config{FrameTimeout: frameTimeout, HeartBeat: stomp.HeartBeat{Send: heartBeat}}
	for _, rc := range frameTimeCases {
		t.Run(rc.name, func(t *testing.T) {
			forEachTransport(t, cfg, func(t *testing.T, e *env, tr string) {
				if rc.blocking {
					e.srv.poll.close()
				}
				alice := e.chat.addUser("alice")
				e.chat.addRoom("r1", alice)
				hold := newStoreHold(e)
				c := e.dial(t, tr)
				c.send(frame("CONNECT", "", "accept-version:1.2", "passcode:token-alice", "heart-beat:0,"+strconv.Itoa(int(heartBeat/time.Millisecond))))
				c.expect("CONNECTED", "heart-beat")
				f(t, e, c, hold)
			})
		})
	}
}

// storeHold makes the fake store hold every SEND until release.
type storeHold struct {
	entered chan struct{} // a SEND waits in the store (one value per SEND)
	release chan struct{}
}

func newStoreHold(e *env) *storeHold {
	h := &storeHold{entered: make(chan struct{}, 64), release: make(chan struct{})}
	e.chat.mu.Lock()
	e.chat.held, e.chat.release = h.entered, h.release
	e.chat.mu.Unlock()
	return h
}

// afterBeats reads frames from c until the server has sent enough
// heart-beats to show that its clock moved past frameTimeout plus a tick
// since c's last frame other than a heart-beat: the heart-beats come
// after it in the stream, so each was queued after it, and two of them
// are at least one tick (heartBeat/2) apart. Any other frame fails the
// test.
func (c *client) afterBeats() {
	c.t.Helper()
	tick := heartBeat / 2
	n := int(frameTimeout/tick) + 2
	c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	for range n {
		f, err := c.r.Read()
		if err != nil {
			c.t.Fatalf("waiting for heart-beats: %v", err)
		}
		if f.Command != stomp.Heartbeat {
			c.t.Fatalf("got %v, want only heart-beats while the client is silent", f)
		}
	}
}

// pipelined returns n whole receipted SENDs, numbered from first, each
// with a body of size octets.
func pipelined(first, n, size int) string {
	var b strings.Builder
	for i := first; i < first+n; i++ {
		id := strconv.Itoa(i)
		b.WriteString(frame("SEND", strings.Repeat("b", size), "destination:/app/rooms.r1", "client-id:c"+id, "receipt:r"+id))
	}
	return b.String()
}

// TestServerPauseIsNotFrameTime reproduces issue 27 defect 4: a sender
// that writes only whole frames pipelines more than a read buffer holds
// while the store holds its first SEND longer than the frame timeout (a
// frozen PostgreSQL); once the store answers, every SEND is receipted,
// and the session goes on: a whole frame sent after another frame
// timeout has passed is receipted, not refused as an incomplete frame.
// The frame timeout counts only the time the server waits for octets it
// is ready to read. (The session used to keep on its socket the deadline
// of a frame whose rest it had to wait for, so that its next read without
// a wait, a frame timeout later, failed with "incomplete frame"; and a
// blocking reader waited for the first octet of the next frame with the
// frame's deadline.)
func TestServerPauseIsNotFrameTime(t *testing.T) {
	forEachReadPath(t, func(t *testing.T, e *env, c *client, hold *storeHold) {
		const n = 8
		c.send(pipelined(1, n, 1200)) // about 10 KiB: the server reads it in several reads
		<-hold.entered
		c.afterBeats() // the store holds SEND r1 for about a frame timeout and more (counted from CONNECTED)
		close(hold.release)
		for i := 1; i <= n; i++ {
			c.expect("RECEIPT", "receipt-id:r"+strconv.Itoa(i))
		}
		c.afterBeats() // a frame timeout after the last frame was read
		c.send(pipelined(n+1, 1, 10))
		c.expect("RECEIPT", "receipt-id:r"+strconv.Itoa(n+1))
		c.expectAlive()
	})
}

// TestFrameTimeoutAfterServerPause: the frame timeout still ends a frame
// that does not arrive, and its clock starts when the server waits for
// the rest, not before: the first half of a SEND that came in while the
// server was busy with the SEND before it (held by the store for over a
// frame timeout) may be finished once the server reads again; half a
// SEND after that, and nothing more, is refused after the frame timeout.
func TestFrameTimeoutAfterServerPause(t *testing.T) {
	forEachReadPath(t, func(t *testing.T, e *env, c *client, hold *storeHold) {
		second := pipelined(2, 1, 10)
		half := len(second) / 2
		c.send(pipelined(1, 1, 10) + second[:half])
		<-hold.entered
		c.afterBeats() // the server reads nothing for about a frame timeout and more
		close(hold.release)
		c.expect("RECEIPT", "receipt-id:r1")
		c.send(second[half:])
		c.expect("RECEIPT", "receipt-id:r2")

		third := pipelined(3, 1, 10)
		c.send(third[:len(third)/2])
		f := c.expect("ERROR", "code:invalid")
		if !strings.Contains(string(f.Body), "incomplete frame") {
			t.Errorf("ERROR body = %q, want an incomplete frame", f.Body)
		}
		c.expectClosed()
	})
}
