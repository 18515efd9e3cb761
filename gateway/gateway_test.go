package gateway

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/hub"
	"parley/stomp"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// forEachTransport runs a conversation over WebSocket and over TCP.
func forEachTransport(t *testing.T, cfg Config, f func(t *testing.T, e *env, transport string)) {
	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) { f(t, newEnv(t, cfg), tr) })
	}
}

func TestConnectAndChat(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
		e.chat.addRoom("r1", alice, bob)

		a := e.dial(t, tr)
		a.connect("alice")
		a.send(frame("SUBSCRIBE", "", "id:sub-0", "destination:/topic/rooms.r1", "receipt:s0"))
		a.expect("RECEIPT", "receipt-id:s0")
		b := e.dial(t, tr)
		b.send("STOMP\naccept-version:1.2\nhost:parley\npasscode:token-bob\n\n\x00")
		b.expect("CONNECTED", "version:1.2", "user-name:bob")
		b.send(frame("SUBSCRIBE", "", "id:q", "destination:/user/queue/messages", "receipt:s1"))
		b.expect("RECEIPT", "receipt-id:s1")

		b.send(frame("SEND", "hello, world", "destination:/app/rooms.r1", "client-id:c1", "receipt:77"))
		// The RECEIPT and bob's own copy of the message may come in either
		// order.
		var id string
		for range 2 {
			f, err := b.read()
			if err != nil {
				t.Fatal(err)
			}
			switch f.Command {
			case stomp.Receipt:
				if string(f.Get("receipt-id")) != "77" || string(f.Get("seq")) != "1" {
					t.Errorf("got %v, want RECEIPT receipt-id:77 seq:1", f)
				}
				id = string(f.Get("message-id"))
			case stomp.Message:
				if string(f.Get("destination")) != "/user/queue/messages" || string(f.Get("subscription")) != "q" ||
					string(f.Get("room")) != "r1" || string(f.Get("seq")) != "1" {
					t.Errorf("got %v, want bob's personal copy", f)
				}
			default:
				t.Fatalf("got %v", f)
			}
		}
		m := a.expect("MESSAGE", "destination:/topic/rooms.r1", "subscription:sub-0", "message-id:"+id,
			"content-type:text/plain;charset=UTF-8", "content-length:12", "room:r1", "seq:1",
			"sender:"+bob.ID, "sender-name:bob", "sent-at", "client-id:c1")
		if string(m.Body) != "hello, world" {
			t.Errorf("body = %q, want %q", m.Body, "hello, world")
		}
		if _, err := time.Parse(time.RFC3339, string(m.Get("sent-at"))); err != nil {
			t.Errorf("sent-at: %v", err)
		}

		a.send(frame("DISCONNECT", "", "receipt:bye"))
		a.expect("RECEIPT", "receipt-id:bye")
		a.expectClosed()
	})
}

// TestRefusals checks that every refusal is an ERROR frame with its message
// header, then a close.
func TestRefusals(t *testing.T) {
	big := strings.Repeat("x", 5000)
	tests := []struct {
		name    string
		connect bool // send a valid CONNECT first
		frames  []string
		message string // the ERROR message header
	}{
		{"bad token", false, []string{frame("CONNECT", "", "accept-version:1.2", "passcode:nope")}, "unauthorized"},
		{"malformed Authorization", false, []string{frame("CONNECT", "", "accept-version:1.2", "Authorization:Basic abc")}, "unauthorized"},
		{"no common version", false, []string{frame("CONNECT", "", "accept-version:2.0", "passcode:token-alice")}, "invalid frame"},
		{"frame before CONNECT", false, []string{frame("SEND", "hi", "destination:/app/rooms.r1")}, "unauthorized"},
		{"non-member subscribe", true, []string{frame("SUBSCRIBE", "", "id:1", "destination:/topic/rooms.secret")}, "forbidden"},
		{"unknown room", true, []string{frame("SUBSCRIBE", "", "id:1", "destination:/topic/rooms.nope")}, "not found"},
		{"unknown destination", true, []string{frame("SUBSCRIBE", "", "id:1", "destination:/queue/other")}, "not found"},
		{"missing subscription id", true, []string{frame("SUBSCRIBE", "", "destination:/topic/rooms.r1")}, "invalid frame"},
		{"duplicate subscription id", true, []string{
			frame("SUBSCRIBE", "", "id:1", "destination:/topic/rooms.r1"),
			frame("SUBSCRIBE", "", "id:1", "destination:/user/queue/messages"),
		}, "invalid frame"},
		{"bad ack mode", true, []string{frame("SUBSCRIBE", "", "id:1", "destination:/topic/rooms.r1", "ack:sometimes")}, "invalid frame"},
		{"bad since-seq", true, []string{frame("SUBSCRIBE", "", "id:1", "destination:/topic/rooms.r1", "since-seq:-4")}, "invalid frame"},
		{"since-seq past the last seq", true, []string{frame("SUBSCRIBE", "", "id:1", "destination:/topic/rooms.r1", "since-seq:1000")}, "invalid frame"},
		{"non-member send", true, []string{frame("SEND", "hi", "destination:/app/rooms.secret")}, "forbidden"},
		{"empty body", true, []string{frame("SEND", "", "destination:/app/rooms.r1")}, "invalid frame"},
		{"oversize frame", true, []string{frame("SEND", big, "destination:/app/rooms.r1")}, "too large"},
		{"oversize content-length", true, []string{"SEND\ndestination:/app/rooms.r1\ncontent-length:999999\n\n"}, "too large"},
		{"malformed header", true, []string{"SEND\ndestination /app/rooms.r1\n\nhi\x00"}, "invalid frame"},
		{"unknown command", true, []string{"SHOUT\n\nhi\x00"}, "invalid frame"},
		{"bad escape", true, []string{"SEND\ndestination:/app/rooms.r1\\q\n\nhi\x00"}, "invalid frame"},
		{"transaction", true, []string{frame("BEGIN", "", "transaction:t1")}, "invalid frame"},
		{"ACK without id", true, []string{frame("ACK", "")}, "invalid frame"},
		{"second CONNECT", true, []string{frame("CONNECT", "", "accept-version:1.2", "passcode:token-alice")}, "invalid frame"},
		{"server frame", true, []string{frame("MESSAGE", "hi", "destination:/topic/rooms.r1")}, "invalid frame"},
	}
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
		e.chat.addRoom("r1", alice)
		e.chat.addRoom("secret", bob)
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				c := e.dial(t, tr)
				if tt.connect {
					c.connect("alice")
				}
				for _, f := range tt.frames {
					c.send(f)
				}
				c.expect("ERROR", "message:"+tt.message, "code")
				c.expectClosed()
			})
		}
	})
}

// TestErrorCarriesReceipt checks the receipt-id of an ERROR for a
// receipted frame.
func TestErrorCarriesReceipt(t *testing.T) {
	e := newEnv(t, Config{})
	e.chat.addUser("alice")
	c := e.dial(t, "tcp")
	c.connect("alice")
	c.send(frame("SEND", "hi", "destination:/app/rooms.none", "receipt:r9"))
	c.expect("ERROR", "message:not found", "receipt-id:r9")
	c.expectClosed()
}

func TestHeartBeats(t *testing.T) {
	cfg := Config{HeartBeat: stomp.HeartBeat{Send: 20 * time.Millisecond, Receive: 20 * time.Millisecond}}
	forEachTransport(t, cfg, func(t *testing.T, e *env, tr string) {
		e.chat.addUser("alice")
		c := e.dial(t, tr)
		c.send(frame("CONNECT", "", "accept-version:1.2", "passcode:token-alice", "heart-beat:20,20"))
		c.expect("CONNECTED", "heart-beat:20,20")
		// The server sends heart-beats: a raw read sees an end-of-line.
		c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		if f, err := c.r.Read(); err != nil || f.Command != stomp.Heartbeat {
			t.Fatalf("read = %v, %v; want a heart-beat", f, err)
		}
		// A silent client is dropped.
		c.expect("ERROR", "message:invalid frame")
		c.expectClosed()
		if got := testutil.ToFloat64(e.srv.m.heartbeatTimeouts); got != 1 {
			t.Errorf("heart-beat timeouts = %v, want 1", got)
		}
	})
}

// TestHeartBeatsKeepAlive checks the heart-beats both ways on one
// session. A client that sends nothing but heart-beat EOLs (as single "\n"
// WebSocket messages, as stomp.js does) for several of the server's
// receive windows stays connected, while the server's own heart-beats
// arrive at the negotiated interval, not the one it offered; once the
// client goes silent it is dropped with ERROR.
func TestHeartBeatsKeepAlive(t *testing.T) {
	const (
		offerSend  = 10 * time.Millisecond  // the server could send this often...
		clientRecv = 20 * time.Millisecond  // ...but the client wants one every 20 ms
		recvEvery  = 500 * time.Millisecond // the server wants to hear every 500 ms (wide: a loaded -race run can stall a goroutine for 200 ms)
		clientSend = 10 * time.Millisecond  // and the client sends every 10 ms
	)
	cfg := Config{HeartBeat: stomp.HeartBeat{Send: offerSend, Receive: recvEvery}}
	forEachTransport(t, cfg, func(t *testing.T, e *env, tr string) {
		e.chat.addRoom("r1", e.chat.addUser("alice"))
		c := e.dial(t, tr)
		start := time.Now()
		c.send(frame("CONNECT", "", "accept-version:1.2", "passcode:token-alice", "heart-beat:10,20"))
		c.expect("CONNECTED", "heart-beat:10,500")
		negotiated, _ := stomp.NegotiateHeartBeat(stomp.HeartBeat{Send: clientSend, Receive: clientRecv}, cfg.HeartBeat)

		// The client's heart-beats: EOLs on a ticker, and no frames.
		stop, stopped := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(stopped)
			tick := time.NewTicker(clientSend)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					return
				case <-tick.C:
					if _, err := c.conn.Write([]byte("\n")); err != nil {
						return // the session ended: the reads below say why
					}
				}
			}
		}()
		// Past the server's receive window (it drops a client silent for
		// 2*recvEvery) several times over, only heart-beats arrive.
		beats := 0
		for beats < 3 || time.Since(start) < 3*2*recvEvery {
			c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			f, err := c.r.Read()
			if err != nil {
				t.Fatalf("after %d heart-beats from the server: read: %v; want the session kept alive by the client's heart-beats", beats, err)
			}
			if f.Command != stomp.Heartbeat {
				t.Fatalf("after %d heart-beats from the server: got %v; want only heart-beats while the client sends its own", beats, f)
			}
			beats++
		}
		close(stop)
		<-stopped
		// The server sends one when it has written nothing for half the
		// negotiated interval, at most once a tick: never more often.
		elapsed := time.Since(start)
		if most := int(elapsed/(negotiated/2)) + 1; beats > most {
			t.Errorf("%d heart-beats from the server in %v, want at most %d (one per %v: half the negotiated %v)", beats, elapsed, most, negotiated/2, negotiated)
		}
		c.send(frame("SEND", "still here", "destination:/app/rooms.r1", "receipt:alive"))
		c.expect("RECEIPT", "receipt-id:alive")

		// Silence: the server drops the client.
		c.expect("ERROR", "message:invalid frame")
		c.expectClosed()
		if got := testutil.ToFloat64(e.srv.m.heartbeatTimeouts); got != 1 {
			t.Errorf("heart-beat timeouts = %v, want 1", got)
		}
	})
}

func TestConnectTimeout(t *testing.T) {
	forEachTransport(t, Config{ConnectTimeout: 20 * time.Millisecond}, func(t *testing.T, e *env, tr string) {
		c := e.dial(t, tr)
		c.expect("ERROR", "message:unauthorized")
		c.expectClosed()
	})
}

// TestSplitAndBatchedFrames sends frames split across WebSocket messages
// (or TCP writes) and several frames in one, as stomp.js may.
func TestSplitAndBatchedFrames(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		alice := e.chat.addUser("alice")
		e.chat.addRoom("r1", alice)
		c := e.dial(t, tr)
		connect := frame("CONNECT", "", "accept-version:1.2,1.1,1.0", "heart-beat:10000,10000", "passcode:token-alice")
		for _, part := range []string{connect[:5], connect[5:20], connect[20:]} {
			c.send(part)
			time.Sleep(time.Millisecond)
		}
		c.expect("CONNECTED", "version:1.2", "heart-beat:10000,10000")
		c.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1", "receipt:a") +
			frame("SEND", "one", "destination:/app/rooms.r1", "receipt:b") +
			"\n" + frame("SEND", "two", "destination:/app/rooms.r1", "receipt:c"))
		c.expect("RECEIPT", "receipt-id:a")
		seen := map[string]bool{}
		for range 4 {
			f, err := c.read()
			if err != nil {
				t.Fatal(err)
			}
			seen[f.Command.String()+" "+string(f.Get("receipt-id"))+string(f.Body)] = true
		}
		for _, want := range []string{"RECEIPT b", "RECEIPT c", "MESSAGE one", "MESSAGE two"} {
			if !seen[want] {
				t.Errorf("did not see %s in %v", want, seen)
			}
		}
	})
}

// TestResumeUnderConcurrentSends subscribes with since-seq while another
// member keeps sending, and checks for no gap and no duplicate.
func TestResumeUnderConcurrentSends(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
		e.chat.addRoom("r1", alice, bob)
		send := func(i int) {
			if _, _, err := e.chat.Send(t.Context(), bob, "r1", fmt.Sprintf("m%d", i), ""); err != nil {
				t.Error(err)
			}
		}
		for i := range 250 {
			send(i)
		}
		const total = 1000
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 250; i < total; i++ {
				send(i)
			}
		}()
		c := e.dial(t, tr)
		c.connect("alice")
		c.send(frame("SUBSCRIBE", "", "id:r", "destination:/topic/rooms.r1", "since-seq:10"))
		for want := int64(11); want <= total; want++ {
			m := c.expect("MESSAGE", "subscription:r")
			if got, _ := strconv.ParseInt(string(m.Get("seq")), 10, 64); got != want {
				t.Fatalf("seq %d, want %d", got, want)
			}
		}
		<-done
		// Nothing more: a receipted frame comes back next.
		c.send(frame("UNSUBSCRIBE", "", "id:r", "receipt:end"))
		c.expect("RECEIPT", "receipt-id:end")
	})
}

// TestIdempotentResend sends the same client-id twice: both RECEIPTs carry
// the same seq and only one MESSAGE is delivered.
func TestIdempotentResend(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		alice := e.chat.addUser("alice")
		e.chat.addRoom("r1", alice)
		c := e.dial(t, tr)
		c.connect("alice")
		c.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1", "receipt:s"))
		c.expect("RECEIPT", "receipt-id:s")
		var ids []string
		for i := range 2 {
			c.send(frame("SEND", "once", "destination:/app/rooms.r1", "client-id:k1", "receipt:"+strconv.Itoa(i)))
		}
		c.send(frame("SEND", "next", "destination:/app/rooms.r1", "receipt:n"))
		var msgs []string
		for len(ids) < 2 || len(msgs) < 2 {
			f, err := c.read()
			if err != nil {
				t.Fatalf("read: %v (receipts %v, messages %v)", err, ids, msgs)
			}
			switch {
			case f.Command == stomp.Receipt && string(f.Get("receipt-id")) != "n":
				if string(f.Get("seq")) != "1" {
					t.Errorf("receipt %v, want seq 1", f)
				}
				ids = append(ids, string(f.Get("message-id")))
			case f.Command == stomp.Message:
				msgs = append(msgs, string(f.Get("seq"))+":"+string(f.Body))
			}
		}
		if ids[0] != ids[1] {
			t.Errorf("message ids %v, want the same twice", ids)
		}
		if strings.Join(msgs, ",") != "1:once,2:next" {
			t.Errorf("messages %v, want 1:once then 2:next", msgs)
		}
	})
}

// TestLeaveStopsDelivery checks that a member who leaves stops receiving
// the room at once, and cannot subscribe again.
func TestLeaveStopsDelivery(t *testing.T) {
	e := newEnv(t, Config{})
	alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
	e.chat.addRoom("r1", alice, bob)
	b := e.dial(t, "websocket")
	b.connect("bob")
	b.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1", "receipt:s"))
	b.expect("RECEIPT", "receipt-id:s")
	e.chat.Send(t.Context(), alice, "r1", "before", "")
	b.expect("MESSAGE", "seq:1")
	e.chat.leave("r1", bob)
	e.chat.Send(t.Context(), alice, "r1", "after", "")
	// A receipt round trip after the send: no MESSAGE may come first.
	b.send(frame("UNSUBSCRIBE", "", "id:0", "receipt:u"))
	b.expect("RECEIPT", "receipt-id:u")
	b.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1"))
	b.expect("ERROR", "message:forbidden")
	b.expectClosed()
}

func TestRateLimit(t *testing.T) {
	forEachTransport(t, Config{SendRate: 1, SendBurst: 2}, func(t *testing.T, e *env, tr string) {
		alice := e.chat.addUser("alice")
		e.chat.addRoom("r1", alice)
		c := e.dial(t, tr)
		c.connect("alice")
		for i := range 3 {
			c.send(frame("SEND", "spam", "destination:/app/rooms.r1", "receipt:"+strconv.Itoa(i)))
		}
		c.expect("RECEIPT", "receipt-id:0")
		c.expect("RECEIPT", "receipt-id:1")
		c.expect("ERROR", "message:rate limited", "receipt-id:2")
		c.expectClosed()
	})
}

func TestOrigin(t *testing.T) {
	e := newEnv(t, Config{})
	tests := []struct {
		origin string
		want   int
	}{
		{"http://evil.example", http.StatusForbidden},
		{"", http.StatusSwitchingProtocols},
		{e.http.URL, http.StatusSwitchingProtocols},
	}
	for _, tt := range tests {
		req, _ := http.NewRequest("GET", e.http.URL+"/ws", nil)
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		req.Header.Set("Sec-WebSocket-Protocol", "v12.stomp")
		req.Header.Set("Sec-WebSocket-Extensions", "permessage-deflate; client_max_window_bits")
		if tt.origin != "" {
			req.Header.Set("Origin", tt.origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tt.want {
			t.Errorf("Origin %q: status %d, want %d", tt.origin, resp.StatusCode, tt.want)
		}
		if resp.StatusCode == http.StatusSwitchingProtocols {
			if ext := resp.Header.Get("Sec-WebSocket-Extensions"); ext != "" {
				t.Errorf("extensions %q accepted, want none", ext)
			}
		}
	}
}

// TestBlockingReadFallback: a session the poller cannot watch (here the
// poller is closed, as on a platform without epoll) reads blocking for its
// whole life: frames after the first are still read.
func TestBlockingReadFallback(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		e.srv.poll.close()
		alice := e.chat.addUser("alice")
		e.chat.addRoom("r1", alice)
		a := e.dial(t, tr)
		a.connect("alice")
		for i := range 3 {
			id := "s" + strconv.Itoa(i)
			a.send(frame("SUBSCRIBE", "", "id:"+id, "destination:/topic/rooms.r1", "receipt:"+id))
			a.expect("RECEIPT", "receipt-id:"+id)
		}
	})
}

// TestLiveSubscriptionPosition: a live-only room subscription is placed,
// before its RECEIPT, at the room's last seq, so that the hub can tell
// the cluster relay where its subscribers start in a room the relay has
// never delivered (hub.Hub.Room); a since-seq one reports where it read.
func TestLiveSubscriptionPosition(t *testing.T) {
	e := newEnv(t, Config{})
	alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
	e.chat.addRoom("r1", alice, bob)
	for i := range 3 {
		if _, _, err := e.chat.Send(context.Background(), bob, "r1", fmt.Sprint(i), ""); err != nil {
			t.Fatal(err)
		}
	}
	a := e.dial(t, "tcp")
	a.connect("alice")
	a.send(frame("SUBSCRIBE", "", "id:live", "destination:/topic/rooms.r1", "receipt:s0"))
	a.expect("RECEIPT", "receipt-id:s0")
	if got, ok := e.hub.Room("r1"); !ok || got != (hub.Position{Low: 3, High: 3}) {
		t.Errorf("after a live-only SUBSCRIBE to a room at seq 3: hub.Room = %v, %v, want {3 3}, true", got, ok)
	}
}

// TestLeaveDuringCatchUp: a member who leaves a room while one of their
// sessions catches up on it (since-seq) loses that subscription, as a
// leave drops the room's subscriptions, and nothing more: the session is
// not refused (it used to get an ERROR "internal" when the catch-up found
// its subscription gone), and its other subscriptions go on.
func TestLeaveDuringCatchUp(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
		e.chat.addRoom("r1", alice, bob)
		e.chat.addRoom("r2", alice, bob)
		for range 3 {
			if _, _, err := e.chat.Send(t.Context(), alice, "r1", "old", ""); err != nil {
				t.Fatal(err)
			}
		}
		// The catch-up's first read of r1's history waits until bob has
		// left r1 and the hub has dropped his subscription there.
		reading, proceed := make(chan struct{}), make(chan struct{})
		var once sync.Once
		e.chat.mu.Lock()
		e.chat.messagesHook = func(roomID string, p parley.Page) {
			if roomID == "r1" && p.Forward() {
				once.Do(func() {
					close(reading)
					<-proceed
				})
			}
		}
		e.chat.mu.Unlock()
		b := e.dial(t, tr)
		b.connect("bob")
		b.send(frame("SUBSCRIBE", "", "id:s2", "destination:/topic/rooms.r2", "receipt:s2"))
		b.expect("RECEIPT", "receipt-id:s2")
		b.send(frame("SUBSCRIBE", "", "id:s1", "destination:/topic/rooms.r1", "since-seq:0", "receipt:s1"))
		b.expect("RECEIPT", "receipt-id:s1")
		<-reading
		e.chat.leave("r1", bob)
		waitFor(t, "the hub to drop the subscription", func() bool {
			return gaugeSum(t, e, "parley_hub_pending_events") == 0
		})
		close(proceed)
		if _, _, err := e.chat.Send(t.Context(), alice, "r2", "still here", ""); err != nil {
			t.Fatal(err)
		}
		if f := b.expect("MESSAGE", "subscription:s2"); string(f.Body) != "still here" {
			t.Errorf("MESSAGE body = %q, want %q", f.Body, "still here")
		}
		b.expectAlive()
	})
}
