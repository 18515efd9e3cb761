package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley/stomp"

	"github.com/gobwas/ws"
)

// TestHostileClientsDoNotReachOthers opens a hostile client of every kind
// issue 10 names, all at once, against one node with the defaults of
// parley serve behind a trusted proxy (so that each client has its own
// address), and checks that a fresh user can still sign up, log in,
// connect, send and receive while they run. Each hostile loop is bounded
// in count and ends when the fresh user is done.
func TestHostileClientsDoNotReachOthers(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) {
		c.StompAddr = "127.0.0.1:0"
		c.TrustedProxies = "127.0.0.1"
		c.StompFrameTimeout = 300 * time.Millisecond // so that droppers see their ERROR soon
	})
	base := "http://" + m.Addr()
	mallory := mustSignUpFrom(t, base, "mallory", "203.0.113.1")
	var malRoom room
	if st := mallory.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "den"}, &malRoom); st != http.StatusCreated {
		t.Fatalf("mallory's room: %d", st)
	}

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var refused atomic.Int64   // hostile attempts the server refused or cut
	var running sync.WaitGroup // each hostile kind has made its first attempts
	hostile := func(name string, n int, f func(i int) bool) {
		running.Add(1)
		wg.Go(func() {
			var once sync.Once
			defer once.Do(running.Done)
			for i := 0; i < n; i++ {
				if i == 3 {
					once.Do(running.Done)
				}
				select {
				case <-stop:
					return
				default:
				}
				if f(i) {
					refused.Add(1)
				}
			}
		})
	}
	stompAddr := m.StompAddr()
	dialTCP := func() net.Conn {
		c, err := net.DialTimeout("tcp", stompAddr, 5*time.Second)
		if err != nil {
			return nil
		}
		c.SetDeadline(time.Now().Add(20 * time.Second))
		return c
	}
	connect := "CONNECT\naccept-version:1.2\nhost:parley\nheart-beat:0,0\npasscode:" + mallory.token + "\n\n\x00"

	// Clients that stop in the middle of a frame, wait for its ERROR and
	// drop (defect 1: their pooled read state must not reach others).
	hostile("drop mid-frame", 40, func(int) bool {
		c := dialTCP()
		if c == nil {
			return false
		}
		defer c.Close()
		io.WriteString(c, "SEND\ndestination:/app/rooms.x\n\nno NUL follows")
		f, err := stomp.NewReader(c, stomp.Limits{}).Read()
		return err == nil && f.Command == stomp.Error
	})
	// Frames that never end, with a heart-beat asking for 50 days (defect 4).
	var held []net.Conn // connections left open on purpose, closed at the end
	var heldMu sync.Mutex
	keep := func(c net.Conn) {
		heldMu.Lock()
		held = append(held, c)
		heldMu.Unlock()
	}
	hostile("unfinished SEND", 30, func(int) bool {
		c := dialTCP()
		if c == nil {
			return false
		}
		io.WriteString(c, "CONNECT\naccept-version:1.2\nhost:parley\nheart-beat:2147483647,0\npasscode:"+mallory.token+"\n\n\x00SEND\ndestination:/app/rooms."+malRoom.ID+"\n\nnever ends")
		keep(c)
		return false
	})
	// Slow request bodies (defect 3).
	hostile("slow body", 30, func(int) bool {
		c, err := net.DialTimeout("tcp", m.Addr(), 5*time.Second)
		if err != nil {
			return false
		}
		fmt.Fprintf(c, "POST /api/users HTTP/1.1\r\nHost: parley\r\nContent-Type: application/json\r\nContent-Length: 60000\r\n\r\n{")
		keep(c)
		return false
	})
	// One user's connection flood and send flood (defect 5).
	hostile("connection flood", 40, func(int) bool {
		c := dialTCP()
		if c == nil {
			return true
		}
		io.WriteString(c, connect)
		r := stomp.NewReader(c, stomp.Limits{})
		f, err := r.Read()
		if err != nil || f.Command != stomp.Connected {
			c.Close()
			return true
		}
		keep(c)
		return false
	})
	hostile("send flood", 5, func(int) bool {
		c := dialTCP()
		if c == nil {
			return false
		}
		defer c.Close()
		var b strings.Builder
		b.WriteString(connect)
		for i := 0; i < 200; i++ {
			b.WriteString("SEND\ndestination:/app/rooms." + malRoom.ID + "\n\nspam\x00")
		}
		io.WriteString(c, b.String())
		return untilError(c)
	})
	// Password guessing and sign-up floods, each from its own address.
	hostile("guess passwords", 60, func(i int) bool {
		st, _ := postFrom(base+"/api/tokens", "203.0.113.2", map[string]string{"name": "mallory", "password": fmt.Sprintf("guess-%d-xx", i)})
		return st == http.StatusTooManyRequests
	})
	hostile("sign-up flood", 40, func(i int) bool {
		st, _ := postFrom(base+"/api/users", "203.0.113.3", map[string]string{"name": fmt.Sprintf("flood%d", i), "password": "correct horse"})
		return st == http.StatusTooManyRequests
	})
	// Malformed input: each refused with a clear error.
	hostile("foreign origin", 20, func(int) bool {
		req, _ := http.NewRequest("GET", base+"/ws", nil)
		req.Header.Set("Origin", "ftp://"+m.Addr())
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusForbidden
	})
	hostile("stray continuation", 20, func(int) bool {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, _, _, err := ws.Dialer{Protocols: []string{"v12.stomp"}}.Dial(ctx, "ws://"+m.Addr()+"/ws")
		if err != nil {
			return false
		}
		defer c.Close()
		f := ws.NewFrame(ws.OpContinuation, true, []byte("CONNECT\n\n\x00"))
		if err := ws.WriteFrame(c, ws.MaskFrameInPlace(f)); err != nil {
			return false
		}
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, err = io.ReadAll(c) // the server fails the connection
		return err == nil
	})
	hostile("NUL client-id", 20, func(int) bool {
		c := dialTCP()
		if c == nil {
			return false
		}
		defer c.Close()
		io.WriteString(c, connect+"SEND\ndestination:/app/rooms."+malRoom.ID+"\nclient-id:a\x00b\n\nhi\x00")
		return untilError(c)
	})
	hostile("lone surrogate", 20, func(int) bool {
		req, _ := http.NewRequest("POST", base+"/api/rooms/"+malRoom.ID+"/messages", strings.NewReader(`{"body":"\ud800"}`))
		req.Header.Set("Authorization", "Bearer "+mallory.token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusBadRequest
	})

	// Meanwhile a fresh user, from an address of their own, does what any
	// user does, their CONNECT arriving in two pieces as from a slow link.
	running.Wait()
	newcomer := mustSignUpFrom(t, base, "newcomer", "198.51.100.7")
	friend := mustSignUpFrom(t, base, "friend", "198.51.100.8")
	var r room
	if st := newcomer.do("POST", "/api/rooms", map[string]string{"kind": "group", "title": "calm"}, &r); st != http.StatusCreated {
		t.Fatalf("newcomer's room: %d", st)
	}
	if st := friend.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("friend joins: %d", st)
	}
	sub := dialStomp(t, m, "websocket", friend.token)
	sub.send("SUBSCRIBE\nid:0\ndestination:/topic/rooms." + r.ID + "\nreceipt:s\n\n\x00")
	sub.expect("RECEIPT", "receipt-id:s")
	conn, err := net.Dial("tcp", stompAddr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	pub := &stompClient{t: t, conn: conn, r: stomp.NewReader(conn, stomp.Limits{})}
	pub.send("CONNECT\naccept-version:1.2\nhost:parley\n")
	time.Sleep(50 * time.Millisecond) // the rest comes in a second segment: the server reads twice
	pub.send("passcode:" + newcomer.token + "\n\n\x00")
	pub.expect("CONNECTED", "version:1.2")
	for i := 1; i <= 5; i++ {
		pub.send(fmt.Sprintf("SEND\ndestination:/app/rooms.%s\nreceipt:r%d\n\nhello %d\x00", r.ID, i, i))
		pub.expect("RECEIPT", fmt.Sprintf("receipt-id:r%d", i), fmt.Sprintf("seq:%d", i))
		f := sub.expect("MESSAGE", fmt.Sprintf("seq:%d", i), "sender-name:newcomer")
		if want := fmt.Sprintf("hello %d", i); string(f.Body) != want {
			t.Errorf("friend got %q, want %q", f.Body, want)
		}
	}
	var page struct{ Messages []message }
	if st := friend.do("GET", "/api/rooms/"+r.ID+"/messages?limit=10", nil, &page); st != http.StatusOK || len(page.Messages) != 5 {
		t.Errorf("friend's history: %d, %d messages, want 200 and 5", st, len(page.Messages))
	}

	close(stop)
	wg.Wait()
	heldMu.Lock()
	for _, c := range held {
		c.Close()
	}
	heldMu.Unlock()
	if refused.Load() == 0 {
		t.Errorf("the server refused no hostile client")
	}
	t.Logf("hostile attempts refused or cut: %d", refused.Load())
}

// untilError reads frames from c until an ERROR (true) or the end of the
// connection (false).
func untilError(c net.Conn) bool {
	r := stomp.NewReader(c, stomp.Limits{})
	for {
		f, err := r.Read()
		if err != nil {
			return false
		}
		if f.Command == stomp.Error {
			return true
		}
	}
}

// postFrom posts a JSON body as a client at addr behind the trusted proxy
// (X-Forwarded-For), returning the status and the decoded body.
func postFrom(url, addr string, body any) (int, map[string]any) {
	data, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", url, bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", addr)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil
	}
	defer resp.Body.Close()
	var out map[string]any
	json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

// mustSignUpFrom signs name up and logs in as a client at addr behind the
// trusted proxy.
func mustSignUpFrom(t *testing.T, base, name, addr string) *client {
	t.Helper()
	creds := map[string]string{"name": name, "password": "correct horse"}
	if st, out := postFrom(base+"/api/users", addr, creds); st != http.StatusCreated {
		t.Fatalf("sign up %s from %s: %d %v", name, addr, st, out)
	}
	st, out := postFrom(base+"/api/tokens", addr, creds)
	tok, _ := out["token"].(string)
	if st != http.StatusCreated || tok == "" {
		t.Fatalf("log in %s from %s: %d %v", name, addr, st, out)
	}
	return &client{t: t, base: base, token: tok}
}
