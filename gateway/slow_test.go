package gateway

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/stomp"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestSlowConsumer has one subscriber that stops reading while another
// keeps up: the slow one gets ERROR "slow consumer" after an unbroken
// prefix of the messages and is closed; the fast one misses nothing.
func TestSlowConsumer(t *testing.T) {
	e := newEnv(t, Config{QueueFrames: 32})
	alice, bob, carol := e.chat.addUser("alice"), e.chat.addUser("bob"), e.chat.addUser("carol")
	e.chat.addRoom("r1", alice, bob, carol)

	fast := e.dial(t, "websocket")
	fast.connect("alice")
	fast.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1", "receipt:s"))
	fast.expect("RECEIPT", "receipt-id:s")

	// The slow client's socket buffer is small, so that the server's
	// writes block soon after it stops reading.
	slow := e.dialSmallBuffer(t)
	slow.connect("bob")
	slow.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1", "receipt:s"))
	slow.expect("RECEIPT", "receipt-id:s")

	closes := e.srv.m.slowConsumer.WithLabelValues(reasonQueueFrames)
	body := strings.Repeat("x", 4000)
	seq := 0
	// Send in lockstep with the fast client until the slow one is cut off.
	for testutil.ToFloat64(closes) == 0 {
		if seq == 100000 {
			t.Fatal("the slow consumer was never closed")
		}
		if _, _, err := e.chat.Send(t.Context(), carol, "r1", body, ""); err != nil {
			t.Fatal(err)
		}
		seq++
		fast.expect("MESSAGE", "seq:"+strconv.Itoa(seq))
	}
	for range 10 {
		e.chat.Send(t.Context(), carol, "r1", "after", "")
		seq++
		fast.expect("MESSAGE", "seq:"+strconv.Itoa(seq))
	}

	want := 1
	for {
		f, err := slow.read()
		if err != nil {
			t.Fatalf("slow client: %v after seq %d, want ERROR", err, want-1)
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
	slow.expectClosed()
	t.Logf("the slow client got %d of %d messages, then ERROR", want-1, seq)
}

// TestTrickledFrameTimesOut checks that a frame whose octets trickle in,
// each well within the frame timeout, is still cut when the whole frame
// takes longer than it: the timeout runs from the frame's first octets.
func TestTrickledFrameTimesOut(t *testing.T) {
	forEachTransport(t, Config{FrameTimeout: 300 * time.Millisecond}, func(t *testing.T, e *env, tr string) {
		alice := e.chat.addUser("alice")
		e.chat.addRoom("r1", alice)
		c := e.dial(t, tr)
		c.connect("alice") // heart-beat 0,0: only the frame timeout applies
		c.send("SEND\n")
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
				}
				if _, err := c.conn.Write([]byte("x")); err != nil || i > 100 {
					return
				}
			}
		}()
		f := c.expect("ERROR")
		if msg := string(f.Get("message")); !strings.Contains(string(f.Body), "incomplete frame") {
			t.Errorf("ERROR %q %q, want an incomplete frame", msg, f.Body)
		}
	})
}
