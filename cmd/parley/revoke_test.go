package main

import (
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/coder/websocket"

	"parley"
	"parley/stomp"
)

func parleyID() string { return parley.NewID()[:10] }

// dialStompRefused is dialStomp for a CONNECT that is expected to fail: it
// sends CONNECT and leaves the answer to the caller.
func dialStompRefused(t *testing.T, m *Main, transport, token string) *stompClient {
	t.Helper()
	var conn net.Conn
	if transport == "websocket" {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		ws, _, err := websocket.Dial(ctx, "ws://"+m.Addr()+"/ws", &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
		if err != nil {
			t.Fatalf("websocket dial: %v", err)
		}
		conn = websocket.NetConn(context.Background(), ws, websocket.MessageText)
	} else {
		var err error
		if conn, err = net.Dial("tcp", m.StompAddr()); err != nil {
			t.Fatalf("tcp dial: %v", err)
		}
	}
	t.Cleanup(func() { conn.Close() })
	c := &stompClient{t: t, conn: conn, r: stomp.NewReader(conn, stomp.Limits{})}
	c.send("CONNECT\naccept-version:1.2\nhost:parley\nAuthorization:Bearer " + token + "\n\n\x00")
	return c
}

// login logs c's user in again and returns a client with the new token.
func login(t *testing.T, c *client, name string) *client {
	t.Helper()
	var tok struct {
		Token string `json:"token"`
	}
	fresh := &client{t: t, base: c.base}
	if st := fresh.do("POST", "/api/tokens", map[string]string{"name": name, "password": "correct horse"}, &tok); st != http.StatusCreated {
		t.Fatalf("login %s: status %d", name, st)
	}
	fresh.token = tok.Token
	return fresh
}

// openSession opens a STOMP session with token and subscribes it to the
// user's queue, so that it is registered before the test goes on.
func openSession(t *testing.T, m *Main, transport, token string) *stompClient {
	t.Helper()
	sc := dialStomp(t, m, transport, token)
	sc.send("SUBSCRIBE\nid:q\ndestination:/user/queue/messages\nreceipt:s\n\n\x00")
	sc.expect("RECEIPT", "receipt-id:s")
	return sc
}

// stillOpen checks that a session answers a receipt.
func stillOpen(t *testing.T, sc *stompClient, what string) {
	t.Helper()
	sc.send("UNSUBSCRIBE\nid:q\nreceipt:alive\n\n\x00")
	if f := sc.read(); f.Command.String() != "RECEIPT" {
		t.Errorf("%s: got %v, want the session open (RECEIPT)", what, f)
	}
}

// TestLogoutEndsSessions: through the real node, DELETE /api/tokens/current
// ends the STOMP sessions that token opened with ERROR unauthorized and
// the token gets 401 from then on, while the user's other tokens and
// their sessions go on; DELETE /api/tokens ends all of them.
func TestLogoutEndsSessions(t *testing.T) {
	m := MustOpenMain(t, func(c *Config) { c.StompAddr = "127.0.0.1:0" })
	for _, transport := range []string{"websocket", "tcp"} {
		for _, tc := range []struct {
			route     string
			otherGone bool // the user's second token is revoked too
		}{
			{"/api/tokens/current", false},
			{"/api/tokens", true},
		} {
			t.Run(transport+" "+tc.route, func(t *testing.T) {
				name := "u" + parleyID()
				first, _ := mustSignUp(t, m.Addr(), name)
				second := login(t, first, name)
				bob, _ := mustSignUp(t, m.Addr(), "b"+parleyID())
				s1 := openSession(t, m, transport, first.token)
				s2 := openSession(t, m, transport, second.token)
				sb := openSession(t, m, transport, bob.token)

				if st := first.do("DELETE", tc.route, nil, nil); st != http.StatusNoContent {
					t.Fatalf("DELETE %s = %d, want 204", tc.route, st)
				}
				s1.expect("ERROR", "code:unauthorized")
				if st := first.do("GET", "/api/me", nil, nil); st != http.StatusUnauthorized {
					t.Errorf("GET /api/me with the logged-out token = %d, want 401", st)
				}
				if tc.otherGone {
					s2.expect("ERROR", "code:unauthorized")
					if st := second.do("GET", "/api/me", nil, nil); st != http.StatusUnauthorized {
						t.Errorf("GET /api/me with the second token = %d, want 401", st)
					}
				} else {
					stillOpen(t, s2, "the session of the user's other token")
					if st := second.do("GET", "/api/me", nil, nil); st != http.StatusOK {
						t.Errorf("GET /api/me with the second token = %d, want 200", st)
					}
				}
				stillOpen(t, sb, "another user's session")
				if st := bob.do("GET", "/api/me", nil, nil); st != http.StatusOK {
					t.Errorf("GET /api/me as another user = %d, want 200", st)
				}
				// A new session with the logged-out token is refused.
				sc := dialStompRefused(t, m, transport, first.token)
				sc.expect("ERROR", "code:unauthorized")
			})
		}
	}
}

// TestClusterRevocation: a token revoked on node A, which node B has just
// accepted (so holds in memory), is refused by B as soon as A's DELETE has
// returned, and the sessions it opened on B end with ERROR unauthorized;
// logging out everywhere on A does the same for every token of the user.
func TestClusterRevocation(t *testing.T) {
	env := needCluster(t)
	a, b := startNode(t, env, "a"), startNode(t, env, "b")
	for _, tc := range []struct {
		route     string
		otherGone bool
	}{
		{"/api/tokens/current", false},
		{"/api/tokens", true},
	} {
		t.Run(tc.route, func(t *testing.T) {
			name := "u" + parleyID()
			first, _ := mustSignUp(t, a.Addr(), name)
			second := login(t, first, name)
			for _, c := range []*client{first, second} {
				if st := on(c, b).do("GET", "/api/me", nil, nil); st != http.StatusOK {
					t.Fatalf("GET /api/me on B = %d, want 200", st)
				}
			}
			s1 := openSession(t, b, "websocket", first.token)
			s2 := openSession(t, b, "websocket", second.token)

			if st := first.do("DELETE", tc.route, nil, nil); st != http.StatusNoContent {
				t.Fatalf("DELETE %s on A = %d, want 204", tc.route, st)
			}
			if st := on(first, b).do("GET", "/api/me", nil, nil); st != http.StatusUnauthorized {
				t.Errorf("GET /api/me on B right after the revocation on A = %d, want 401", st)
			}
			s1.expect("ERROR", "code:unauthorized")
			want := http.StatusOK
			if tc.otherGone {
				want = http.StatusUnauthorized
				s2.expect("ERROR", "code:unauthorized")
			} else {
				stillOpen(t, s2, "the session of the user's other token on B")
			}
			if st := on(second, b).do("GET", "/api/me", nil, nil); st != want {
				t.Errorf("GET /api/me on B with the user's other token = %d, want %d", st, want)
			}
		})
	}
}
