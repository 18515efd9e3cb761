package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// fakeCentrifugo speaks the part of Centrifugo's JSON protocol the bench
// uses: connect with an HS256 token signed with secret, subscribe,
// publish fanned out as pushes to every subscriber of the channel. It
// pings each client ({}) after connecting and counts the pongs; it puts
// the publisher's own push and the publish reply in one WebSocket
// message, one line each, as Centrifugo may.
type fakeCentrifugo struct {
	t      *testing.T
	secret string
	pongs  atomic.Int64

	mu   sync.Mutex // guards subs
	subs map[string][]*fakeConn
}

func newFakeCentrifugo(t *testing.T, secret string) (*fakeCentrifugo, string) {
	f := &fakeCentrifugo{t: t, secret: secret, subs: map[string][]*fakeConn{}}
	srv := httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(srv.Close)
	return f, "ws" + strings.TrimPrefix(srv.URL, "http") + "/connection/websocket"
}

// validToken checks an HS256 token's signature and that it names a user.
func (f *fakeCentrifugo) validToken(tok string) bool {
	parts := strings.Split(tok, ".")
	if len(parts) != 3 {
		return false
	}
	mac := hmac.New(sha256.New, []byte(f.secret))
	mac.Write([]byte(parts[0] + "." + parts[1]))
	sig, err := base64.RawURLEncoding.DecodeString(parts[2])
	if err != nil || !hmac.Equal(sig, mac.Sum(nil)) {
		return false
	}
	claims, _ := base64.RawURLEncoding.DecodeString(parts[1])
	var c struct {
		Sub string `json:"sub"`
		Exp int64  `json:"exp"`
	}
	return json.Unmarshal(claims, &c) == nil && c.Sub != "" && c.Exp > time.Now().Unix()
}

func (f *fakeCentrifugo) serve(w http.ResponseWriter, r *http.Request) {
	nc, _, _, err := ws.UpgradeHTTP(r, w)
	if err != nil {
		return
	}
	defer nc.Close()
	c := &fakeConn{nc: nc}
	rw := rwOf{bufio.NewReader(nc), nc}
	connected := false
	for {
		data, op, err := wsutil.ReadClientData(rw)
		if err != nil {
			return
		}
		if op != ws.OpText {
			continue
		}
		for _, line := range bytes.Split(data, []byte{'\n'}) {
			if string(line) == "{}" {
				f.pongs.Add(1)
				continue
			}
			var cmd struct {
				ID      int64 `json:"id"`
				Connect *struct {
					Token string `json:"token"`
				} `json:"connect"`
				Subscribe *struct {
					Channel string `json:"channel"`
				} `json:"subscribe"`
				Publish *struct {
					Channel string          `json:"channel"`
					Data    json.RawMessage `json:"data"`
				} `json:"publish"`
			}
			if err := json.Unmarshal(line, &cmd); err != nil {
				f.t.Errorf("fake centrifugo: bad command %q: %v", line, err)
				return
			}
			reply := func(body string) []byte {
				return []byte(`{"id":` + itoa(int(cmd.ID)) + `,` + body + `}`)
			}
			switch {
			case cmd.Connect != nil:
				if !f.validToken(cmd.Connect.Token) {
					c.write(reply(`"error":{"code":109,"message":"token expired or invalid"}`))
					return
				}
				connected = true
				c.write(reply(`"connect":{"client":"x","version":"fake","ping":25,"pong":true}`))
				c.write([]byte("{}"))
			case !connected:
				return
			case cmd.Subscribe != nil:
				f.mu.Lock()
				f.subs[cmd.Subscribe.Channel] = append(f.subs[cmd.Subscribe.Channel], c)
				f.mu.Unlock()
				c.write(reply(`"subscribe":{}`))
			case cmd.Publish != nil:
				f.mu.Lock()
				subs := append([]*fakeConn(nil), f.subs[cmd.Publish.Channel]...)
				f.mu.Unlock()
				push := []byte(`{"push":{"channel":"` + cmd.Publish.Channel + `","pub":{"data":` + string(cmd.Publish.Data) + `,"offset":1}}}`)
				var own []byte
				for _, s := range subs {
					if s == c {
						own = append(own, push...)
						own = append(own, '\n')
						continue
					}
					s.write(push)
				}
				c.write(append(own, reply(`"publish":{}`)...))
			}
		}
	}
}

// TestMessagingAgainstFakeCentrifugo runs direct, group and bigroom
// against a Centrifugo-like server and checks the accounting.
func TestMessagingAgainstFakeCentrifugo(t *testing.T) {
	for _, tc := range []struct {
		name    string
		scn     Scenario
		opts    Options
		senders int
		subs    int64
	}{
		{"direct", Direct, Options{Users: 4, Loops: 5}, 4, 2},
		{"group", Group, Options{Users: 5, Loops: 4, MinInterval: 5 * time.Millisecond, MaxInterval: 20 * time.Millisecond}, 5, 5},
		{"bigroom", BigRoom, Options{Users: 7, Senders: 2, Loops: 6, MinInterval: 5 * time.Millisecond, MaxInterval: 5 * time.Millisecond, Late: 10 * time.Minute}, 2, 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, url := newFakeCentrifugo(t, "s3cret")
			o := tc.opts
			o.Target, o.URLs, o.Secret = TargetCentrifugo, []string{url}, "s3cret"
			o.Duration, o.Drain = 5*time.Second, 5*time.Second
			res, err := Run(context.Background(), tc.scn, o)
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			m := res.Messaging
			if m == nil {
				t.Fatal("no messaging result")
			}
			wantSent := int64(tc.senders * o.Loops)
			if m.Sent != wantSent || m.Accepted != wantSent {
				t.Errorf("sent %d, accepted %d, want %d", m.Sent, m.Accepted, wantSent)
			}
			if m.Expected != wantSent*tc.subs || m.Received != m.Expected || m.Lost != 0 || m.Duplicates != 0 {
				t.Errorf("expected %d received %d lost %d dup %d, want %d all received", m.Expected, m.Received, m.Lost, m.Duplicates, wantSent*tc.subs)
			}
			if want := wantSent * (tc.subs - 1); res.Latency.Count != want {
				t.Errorf("latency count %d, want %d", res.Latency.Count, want)
			}
			if res.ErrorCount != 0 {
				t.Errorf("errors: %v", res.Errors)
			}
			if m.Receipt.Count != wantSent {
				t.Errorf("receipts %d, want %d", m.Receipt.Count, wantSent)
			}
			if got := f.pongs.Load(); got != int64(o.Users) {
				t.Errorf("%d pongs to the server's pings, want one per client (%d)", got, o.Users)
			}
			if b := res.BigRoom; tc.scn == BigRoom {
				if b == nil || b.Members != o.Users || b.Senders != tc.senders || b.Late != 0 {
					t.Errorf("bigroom result %+v, want %d members, %d senders, 0 late", b, o.Users, tc.senders)
				}
			} else if b != nil {
				t.Errorf("%s has a bigroom result", tc.scn)
			}
		})
	}
}

func TestCentrifugoWrongSecret(t *testing.T) {
	_, url := newFakeCentrifugo(t, "right")
	_, err := Run(context.Background(), Group, Options{
		Target: TargetCentrifugo, URLs: []string{url}, Secret: "wrong", Users: 2, Loops: 1, Duration: time.Second,
	})
	if err == nil || !strings.Contains(err.Error(), "token expired or invalid") {
		t.Errorf("Run with the wrong secret: %v, want the server's refusal", err)
	}
}

func TestCentrifugoNeedsSecret(t *testing.T) {
	_, err := Run(context.Background(), Group, Options{Target: TargetCentrifugo, URLs: []string{"ws://127.0.0.1:1/connection/websocket"}})
	if err == nil || !strings.Contains(err.Error(), "--centrifugo-secret") {
		t.Errorf("Run without a secret: %v, want a hint at --centrifugo-secret", err)
	}
}

func TestParseCFLine(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want cfLine
	}{
		{`{"id":12,"publish":{}}`, cfLine{kind: cfReply, id: 12}},
		{`{"id":3,"error":{"code":103,"message":"permission denied"}}`, cfLine{kind: cfReply, id: 3, err: "permission denied"}},
		{`{"push":{"channel":"c","pub":{"data":"1:2:3:xx","offset":4}}}`, cfLine{kind: cfPush, data: []byte("1:2:3:xx")}},
		{`{"push":{"channel":"c","join":{"info":{}}}}`, cfLine{}},
		{`{"push":{"channel":"c","pub":{"data":{"a":1}}}}`, cfLine{}},
	} {
		got := parseCFLine([]byte(tc.in))
		if got.kind != tc.want.kind || got.id != tc.want.id || got.err != tc.want.err || !bytes.Equal(got.data, tc.want.data) {
			t.Errorf("parseCFLine(%q) = %+v, want %+v", tc.in, got, tc.want)
		}
	}
}

func TestCountAbove(t *testing.T) {
	h := newHist()
	for _, us := range []int64{10, 999_000, 1_000_000, 1_001_000, 5_000_000} {
		h.RecordValue(us)
	}
	if got := countAbove(h, time.Second); got != 2 {
		t.Errorf("countAbove(1s) = %d, want 2 (1.001 s and 5 s)", got)
	}
	if got := countAbove(hdrhistogram.New(1, 10, 1), time.Second); got != 0 {
		t.Errorf("countAbove of an empty histogram = %d", got)
	}
}
