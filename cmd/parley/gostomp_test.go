package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	parleystomp "parley/stomp"

	"github.com/go-stomp/stomp/v3"
)

// These tests drive the node with a third-party STOMP client,
// github.com/go-stomp/stomp/v3, over the raw TCP listener (--stomp-addr):
// what a Go program talking to Parley would use.

// mustOpenMainStomp starts a node that also listens for raw TCP STOMP.
func mustOpenMainStomp(t testing.TB) *Main {
	t.Helper()
	return MustOpenMain(t, func(c *Config) {
		c.StompAddr = "127.0.0.1:0"
		c.StompHeartBeat, c.StompSendRate, c.StompQueue = 10*time.Second, 100, 1024
	})
}

// testLogger sends go-stomp's log lines to the test log until the test
// ends: go-stomp's goroutines may still log while a connection closes.
type testLogger struct {
	t    testing.TB
	mu   *sync.Mutex // guards done
	done *bool
}

func newTestLogger(t testing.TB) testLogger {
	l := testLogger{t: t, mu: new(sync.Mutex), done: new(bool)}
	t.Cleanup(func() {
		l.mu.Lock()
		*l.done = true
		l.mu.Unlock()
	})
	return l
}

func (l testLogger) log(format string, v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !*l.done {
		l.t.Logf("go-stomp: "+format, v...)
	}
}

func (l testLogger) Debugf(format string, v ...any)   {}
func (l testLogger) Infof(format string, v ...any)    { l.log(format, v...) }
func (l testLogger) Warningf(format string, v ...any) { l.log(format, v...) }
func (l testLogger) Errorf(format string, v ...any)   { l.log(format, v...) }
func (l testLogger) Debug(msg string)                 {}
func (l testLogger) Info(msg string)                  { l.log("%s", msg) }
func (l testLogger) Warning(msg string)               { l.log("%s", msg) }
func (l testLogger) Error(msg string)                 { l.log("%s", msg) }

// goStompDial connects go-stomp to the node's TCP listener, bounded by
// 10 s. The returned tap holds every byte go-stomp read.
func goStompDial(t testing.TB, m *Main, opts ...func(*stomp.Conn) error) (*stomp.Conn, *wireTap, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	nc, err := (&net.Dialer{}).DialContext(ctx, "tcp", m.StompAddr())
	if err != nil {
		return nil, nil, err
	}
	tap := &wireTap{Conn: nc}
	opts = append([]func(*stomp.Conn) error{
		stomp.ConnOpt.Host("parley"),
		stomp.ConnOpt.Logger(newTestLogger(t)),
		stomp.ConnOpt.RcvReceiptTimeout(10 * time.Second),
		stomp.ConnOpt.DisconnectReceiptTimeout(10 * time.Second),
	}, opts...)
	c, err := stomp.ConnectWithContext(ctx, tap, opts...)
	if err != nil {
		nc.Close()
		return nil, nil, err
	}
	return c, tap, nil
}

// wireTap is a connection that keeps a copy of what was read from it, so
// that a test can check frames go-stomp does not show, such as RECEIPT
// headers.
type wireTap struct {
	net.Conn
	mu sync.Mutex // guards in
	in bytes.Buffer
}

func (w *wireTap) Read(p []byte) (int, error) {
	n, err := w.Conn.Read(p)
	w.mu.Lock()
	w.in.Write(p[:n])
	w.mu.Unlock()
	return n, err
}

// receipts returns the "seq message-id" of every RECEIPT read so far that
// answered a SEND, in order.
func (w *wireTap) receipts(t testing.TB) []string {
	t.Helper()
	w.mu.Lock()
	data := bytes.Clone(w.in.Bytes())
	w.mu.Unlock()
	r := parleystomp.NewReader(bytes.NewReader(data), parleystomp.Limits{})
	r.SetVersion(parleystomp.V12)
	var out []string
	for {
		f, err := r.Read()
		if err != nil {
			return out // the end of what was read, maybe within a frame
		}
		if f.Command == parleystomp.Receipt {
			if seq, ok := f.Lookup("seq"); ok {
				out = append(out, string(seq)+" "+string(f.Get("message-id")))
			}
		}
	}
}

// mustGoStompDial is goStompDial that fails the test on error and
// disconnects at the end of the test.
func mustGoStompDial(t testing.TB, m *Main, opts ...func(*stomp.Conn) error) (*stomp.Conn, *wireTap) {
	t.Helper()
	c, tap, err := goStompDial(t, m, opts...)
	if err != nil {
		t.Fatalf("go-stomp dial: %v", err)
	}
	t.Cleanup(func() { c.MustDisconnect() })
	return c, tap
}

// goStompSend sends body to the room with a receipt, so it returns once
// the message is committed.
func goStompSend(t testing.TB, c *stomp.Conn, roomID, body, clientID string) {
	t.Helper()
	err := c.Send("/app/rooms."+roomID, "text/plain", []byte(body),
		stomp.SendOpt.Receipt, stomp.SendOpt.Header("client-id", clientID))
	if err != nil {
		t.Fatalf("go-stomp send %q: %v", body, err)
	}
}

// wantMsg is a MESSAGE a subscriber should receive.
type wantMsg struct {
	seq      int64
	sender   user
	body     string
	clientID string
}

// expectMessages reads len(want) messages from sub, in order, each within
// 10 s, and checks their headers and bodies. It returns the messages.
func expectMessages(t testing.TB, who string, sub *stomp.Subscription, roomID string, want ...wantMsg) []*stomp.Message {
	t.Helper()
	var got []*stomp.Message
	for _, w := range want {
		var msg *stomp.Message
		select {
		case m, ok := <-sub.C:
			if !ok {
				t.Fatalf("%s: subscription closed while waiting for seq %d", who, w.seq)
			}
			msg = m
		case <-time.After(10 * time.Second):
			t.Fatalf("%s: no MESSAGE within 10s, want seq %d %q", who, w.seq, w.body)
		}
		if msg.Err != nil {
			t.Fatalf("%s: subscription error waiting for seq %d: %v", who, w.seq, msg.Err)
		}
		h := msg.Header
		wantHeaders := [][2]string{
			{"seq", strconv.FormatInt(w.seq, 10)},
			{"room", roomID},
			{"sender", w.sender.ID},
			{"sender-name", w.sender.Name},
			{"destination", "/topic/rooms." + roomID},
			{"subscription", sub.Id()},
			{"client-id", w.clientID},
		}
		for _, kv := range wantHeaders {
			if v := h.Get(kv[0]); v != kv[1] {
				t.Errorf("%s: MESSAGE seq %s: header %s = %q, want %q (headers %v)", who, h.Get("seq"), kv[0], v, kv[1], headerList(h))
			}
		}
		for _, name := range []string{"message-id", "sent-at", "content-type"} {
			if h.Get(name) == "" {
				t.Errorf("%s: MESSAGE seq %s: no %s header (headers %v)", who, h.Get("seq"), name, headerList(h))
			}
		}
		if _, err := time.Parse(time.RFC3339, h.Get("sent-at")); err != nil {
			t.Errorf("%s: MESSAGE seq %s: sent-at %q: %v", who, h.Get("seq"), h.Get("sent-at"), err)
		}
		if string(msg.Body) != w.body {
			t.Errorf("%s: MESSAGE seq %s: body %q, want %q", who, h.Get("seq"), msg.Body, w.body)
		}
		got = append(got, msg)
	}
	return got
}

// expectNoMessage checks that nothing is pending on sub right now, which
// after a known-later message was read means nothing was duplicated.
func expectNoMessage(t testing.TB, who string, sub *stomp.Subscription) {
	t.Helper()
	select {
	case m := <-sub.C:
		if m.Err != nil {
			t.Errorf("%s: unexpected subscription error: %v", who, m.Err)
		} else {
			t.Errorf("%s: unexpected MESSAGE seq %s %q", who, m.Header.Get("seq"), m.Body)
		}
	default:
	}
}

func headerList(h interface {
	Len() int
	GetAt(int) (string, string)
}) []string {
	var out []string
	for i := range h.Len() {
		k, v := h.GetAt(i)
		out = append(out, k+":"+v)
	}
	return out
}

// TestGoStompClient chats through the node with go-stomp: two users, live
// delivery in seq order to both, a resume with since-seq after a
// disconnect, and the room list over REST afterwards.
func TestGoStompClient(t *testing.T) {
	m := mustOpenMainStomp(t)
	aliceAPI, alice := mustSignUp(t, m.Addr(), "alice")
	bobAPI, bob := mustSignUp(t, m.Addr(), "bob")
	var r room
	if st := aliceAPI.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "go-stomp", "capacity": 10}, &r); st != http.StatusCreated {
		t.Fatalf("create room: status %d", st)
	}
	if st := bobAPI.do("POST", "/api/rooms/"+r.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("bob joins: status %d", st)
	}
	topic := "/topic/rooms." + r.ID

	// bob authenticates with the Authorization header; alice with
	// login/passcode, the way go-stomp's ConnOpt.Login sends it.
	bobConn, _ := mustGoStompDial(t, m, stomp.ConnOpt.Header("Authorization", "Bearer "+bobAPI.token))
	if v := bobConn.Version(); v != stomp.V12 {
		t.Errorf("bob: negotiated STOMP %s, want 1.2", v)
	}
	if !strings.HasPrefix(bobConn.Server(), "parley/") || bobConn.Session() == "" {
		t.Errorf("bob: CONNECTED server %q session %q, want parley/… and a session", bobConn.Server(), bobConn.Session())
	}
	bobSub, err := bobConn.Subscribe(topic, stomp.AckAuto, stomp.SubscribeOpt.Id("room"))
	if err != nil {
		t.Fatalf("bob subscribe: %v", err)
	}
	// The server handles a connection's frames in order, so once this
	// SEND's RECEIPT is back, bob's subscription was live before seq 1.
	goStompSend(t, bobConn, r.ID, "hi from bob", "b1")

	aliceConn, aliceTap := mustGoStompDial(t, m, stomp.ConnOpt.Login("", aliceAPI.token))
	// alice subscribes after seq 1: since-seq 0 replays it, then goes live.
	aliceSub, err := aliceConn.Subscribe(topic, stomp.AckAuto, stomp.SubscribeOpt.Header("since-seq", "0"))
	if err != nil {
		t.Fatalf("alice subscribe: %v", err)
	}
	goStompSend(t, aliceConn, r.ID, "hello bob", "a1")
	goStompSend(t, aliceConn, r.ID, "línea: dos\\tres", "a2") // ':' and '\' in the body are not headers
	goStompSend(t, bobConn, r.ID, "ok", "b2")

	want := []wantMsg{
		{1, bob, "hi from bob", "b1"},
		{2, alice, "hello bob", "a1"},
		{3, alice, "línea: dos\\tres", "a2"},
		{4, bob, "ok", "b2"},
	}
	expectMessages(t, "alice", aliceSub, r.ID, want...)
	bobGot := expectMessages(t, "bob", bobSub, r.ID, want...)

	// The MESSAGE ids are the REST message ids.
	var page struct{ Messages []message }
	if st := bobAPI.do("GET", "/api/rooms/"+r.ID+"/messages?after=0", nil, &page); st != http.StatusOK {
		t.Fatalf("history: status %d", st)
	}
	if got := seqs(page.Messages); got != "1,2,3,4" {
		t.Fatalf("history seqs = %s, want 1,2,3,4", got)
	}
	for i, msg := range bobGot {
		if id := msg.Header.Get("message-id"); id != page.Messages[i].ID {
			t.Errorf("MESSAGE seq %d message-id = %q, want the REST id %q", i+1, id, page.Messages[i].ID)
		}
	}

	// A repeated client-id stores nothing new and delivers nothing new.
	goStompSend(t, aliceConn, r.ID, "hello bob", "a1")

	// bob leaves; alice goes on talking.
	if err := bobConn.Disconnect(); err != nil {
		t.Fatalf("bob disconnect: %v", err)
	}
	goStompSend(t, aliceConn, r.ID, "are you there?", "a3")
	goStompSend(t, aliceConn, r.ID, "bob?", "a4")

	// bob comes back and resumes after the last seq he saw: the two he
	// missed, then live ones, with no gap and no duplicate.
	bobConn, _ = mustGoStompDial(t, m, stomp.ConnOpt.Login("bob", bobAPI.token))
	bobSub, err = bobConn.Subscribe(topic, stomp.AckClientIndividual, stomp.SubscribeOpt.Id("room"), stomp.SubscribeOpt.Header("since-seq", "4"))
	if err != nil {
		t.Fatalf("bob resubscribe: %v", err)
	}
	goStompSend(t, aliceConn, r.ID, "welcome back", "a5")
	missed := []wantMsg{
		{5, alice, "are you there?", "a3"},
		{6, alice, "bob?", "a4"},
		{7, alice, "welcome back", "a5"},
	}
	for _, msg := range expectMessages(t, "bob after resume", bobSub, r.ID, missed...) {
		if err := bobConn.Ack(msg); err != nil {
			t.Errorf("bob ack seq %s: %v", msg.Header.Get("seq"), err)
		}
	}
	expectMessages(t, "alice", aliceSub, r.ID, missed...)
	goStompSend(t, bobConn, r.ID, "here now", "b3")
	last := wantMsg{8, bob, "here now", "b3"}
	expectMessages(t, "bob", bobSub, r.ID, last)
	expectMessages(t, "alice", aliceSub, r.ID, last)
	expectNoMessage(t, "bob", bobSub)
	expectNoMessage(t, "alice", aliceSub)

	// Each of alice's RECEIPTs carried the seq and id of her message; the
	// repeated client-id a1 got the original's.
	page.Messages = nil
	if st := aliceAPI.do("GET", "/api/rooms/"+r.ID+"/messages?after=0", nil, &page); st != http.StatusOK {
		t.Fatalf("history: status %d", st)
	}
	if got := seqs(page.Messages); got != "1,2,3,4,5,6,7,8" {
		t.Fatalf("history seqs = %s, want 1,2,3,4,5,6,7,8", got)
	}
	var wantReceipts []string
	for _, seq := range []int{2, 3, 2, 5, 6, 7} {
		wantReceipts = append(wantReceipts, fmt.Sprintf("%d %s", seq, page.Messages[seq-1].ID))
	}
	if got := aliceTap.receipts(t); !slices.Equal(got, wantReceipts) {
		t.Errorf("alice's RECEIPTs (seq message-id) = %q, want %q", got, wantReceipts)
	}

	// The room list over REST: bob's own send moved his read position, so
	// nothing is unread for him; alice has bob's last message unread.
	type roomList struct {
		Rooms []struct {
			Room        room     `json:"room"`
			LastMessage *message `json:"last_message"`
			Unread      int64    `json:"unread"`
		} `json:"rooms"`
	}
	check := func(who string, c *client, wantUnread int64) {
		t.Helper()
		var list roomList
		if st := c.do("GET", "/api/me/rooms", nil, &list); st != http.StatusOK {
			t.Fatalf("%s room list: status %d", who, st)
		}
		if len(list.Rooms) != 1 {
			t.Fatalf("%s room list = %+v, want the one room", who, list)
		}
		e := list.Rooms[0]
		if e.Room.ID != r.ID || e.Room.LastSeq != 8 || e.Unread != wantUnread {
			t.Errorf("%s room list entry: room %s last_seq %d unread %d, want %s 8 %d", who, e.Room.ID, e.Room.LastSeq, e.Unread, r.ID, wantUnread)
		}
		if lm := e.LastMessage; lm == nil || lm.Seq != 8 || lm.Body != "here now" || lm.SenderID != bob.ID || lm.ClientID != "b3" {
			t.Errorf("%s room list last_message = %+v, want seq 8 %q from bob", who, lm, "here now")
		}
	}
	check("bob", bobAPI, 0)
	check("alice", aliceAPI, 1)
	if st := aliceAPI.do("PUT", "/api/rooms/"+r.ID+"/read", map[string]int64{"seq": 8}, nil); st != http.StatusNoContent {
		t.Fatalf("alice marks read: status %d", st)
	}
	check("alice after reading", aliceAPI, 0)

	if err := aliceSub.Unsubscribe(); err != nil {
		t.Errorf("alice unsubscribe: %v", err)
	}
	if err := aliceConn.Disconnect(); err != nil {
		t.Errorf("alice disconnect: %v", err)
	}
}

// TestGoStompRefused checks that go-stomp reports the server's refusals as
// errors: a wrong token at CONNECT, and a room the user is not in.
func TestGoStompRefused(t *testing.T) {
	m := mustOpenMainStomp(t)
	aliceAPI, _ := mustSignUp(t, m.Addr(), "alice")
	malloryAPI, _ := mustSignUp(t, m.Addr(), "mallory")
	var r room
	if st := aliceAPI.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "private"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: status %d", st)
	}

	for _, tc := range []struct {
		name string
		opt  func(*stomp.Conn) error
	}{
		{"wrong passcode", stomp.ConnOpt.Login("alice", "not-a-token")},
		{"wrong bearer token", stomp.ConnOpt.Header("Authorization", "Bearer not-a-token")},
		{"no credentials", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _, err := goStompDial(t, m, tc.opt)
			if err == nil {
				c.MustDisconnect()
				t.Fatalf("go-stomp dial with %s: no error, want the server's ERROR", tc.name)
			}
			var se stomp.Error
			if !errors.As(err, &se) || se.Frame == nil || se.Frame.Command != "ERROR" {
				t.Fatalf("go-stomp dial with %s: error %v (%T), want a stomp.Error from an ERROR frame", tc.name, err, err)
			}
			if se.Message == "" {
				t.Errorf("ERROR frame without a message header: %v", headerList(se.Frame.Header))
			}
			t.Logf("refused: %v", err)
		})
	}

	// mallory may connect but not read or post in alice's room.
	t.Run("not a member", func(t *testing.T) {
		c, _ := mustGoStompDial(t, m, stomp.ConnOpt.Login("", malloryAPI.token))
		err := c.Send("/app/rooms."+r.ID, "text/plain", []byte("let me in"), stomp.SendOpt.Receipt)
		if err == nil {
			t.Fatalf("go-stomp send to a room mallory is not in: no error")
		}
		t.Logf("refused: %v", err)

		c, _ = mustGoStompDial(t, m, stomp.ConnOpt.Login("", malloryAPI.token))
		sub, err := c.Subscribe("/topic/rooms."+r.ID, stomp.AckAuto)
		if err != nil {
			t.Fatalf("subscribe: %v", err)
		}
		select {
		case msg, ok := <-sub.C:
			if !ok || msg.Err == nil {
				t.Fatalf("subscribe to a room mallory is not in: got %v, want an error", msg)
			}
			t.Logf("refused: %v", msg.Err)
		case <-time.After(10 * time.Second):
			t.Fatalf("subscribe to a room mallory is not in: no ERROR within 10s")
		}
	})

	var page struct{ Messages []message }
	aliceAPI.do("GET", "/api/rooms/"+r.ID+"/messages", nil, &page)
	if len(page.Messages) != 0 {
		t.Errorf("alice's room has %d messages, want none: %s", len(page.Messages), fmt.Sprint(page.Messages))
	}
}

// TestGoStompVersions speaks each STOMP version go-stomp offers, with
// CONNECT and with STOMP, and checks that header values survive each
// version's escaping rules (1.0 has none; 1.1 and 1.2 escape ':').
func TestGoStompVersions(t *testing.T) {
	m := mustOpenMainStomp(t)
	aliceAPI, alice := mustSignUp(t, m.Addr(), "alice")
	var r room
	if st := aliceAPI.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "versions"}, &r); st != http.StatusCreated {
		t.Fatalf("create room: status %d", st)
	}
	seq := int64(0)
	for _, v := range []stomp.Version{stomp.V10, stomp.V11, stomp.V12} {
		for _, useStomp := range []bool{false, true} {
			if useStomp && v == stomp.V10 {
				continue // the STOMP frame is 1.1 and later
			}
			name := "STOMP " + string(v) + " CONNECT"
			opts := []func(*stomp.Conn) error{stomp.ConnOpt.AcceptVersion(v), stomp.ConnOpt.Login("", aliceAPI.token)}
			if useStomp {
				name = "STOMP " + string(v) + " STOMP"
				opts = append(opts, stomp.ConnOpt.UseStomp)
			}
			t.Run(name, func(t *testing.T) {
				c, _ := mustGoStompDial(t, m, opts...)
				if got := c.Version(); got != v {
					t.Fatalf("negotiated %s, want %s", got, v)
				}
				sub, err := c.Subscribe("/topic/rooms."+r.ID, stomp.AckClient, stomp.SubscribeOpt.Id("s"))
				if err != nil {
					t.Fatalf("subscribe: %v", err)
				}
				seq++
				clientID := fmt.Sprintf("%s:%d", name, seq)
				goStompSend(t, c, r.ID, "body in "+name, clientID)
				msg := expectMessages(t, name, sub, r.ID, wantMsg{seq, alice, "body in " + name, clientID})[0]
				if err := c.Ack(msg); err != nil {
					t.Errorf("ack: %v", err)
				}
				if err := sub.Unsubscribe(); err != nil {
					t.Errorf("unsubscribe: %v", err)
				}
				if err := c.Disconnect(); err != nil {
					t.Errorf("disconnect: %v", err)
				}
			})
		}
	}
}
