package gateway

import (
	"sync"
	"testing"
	"time"

	"parley"
)

// connectToken sends CONNECT with token and expects CONNECTED.
func (c *client) connectToken(token string) {
	c.t.Helper()
	c.send(frame("CONNECT", "", "accept-version:1.2", "passcode:"+token, "heart-beat:0,0"))
	c.expect("CONNECTED")
}

// expectAlive checks that the session still answers.
func (c *client) expectAlive() {
	c.t.Helper()
	c.send(frame("SUBSCRIBE", "", "id:alive", "destination:/user/queue/messages", "receipt:alive"))
	c.expect("RECEIPT", "receipt-id:alive")
}

// expectRefused checks for ERROR code:code with body, then the close.
func (c *client) expectRefused(code, body string) {
	c.t.Helper()
	f := c.expect("ERROR", "code:"+code)
	if string(f.Body) != body {
		c.t.Errorf("ERROR body = %q, want %q", f.Body, body)
	}
	c.expectClosed()
}

// TestRevoke checks that Revoke ends exactly the sessions of the user
// opened with the revoked token (every session of the user for a nil
// hash), on both transports, and leaves the others working.
func TestRevoke(t *testing.T) {
	tests := []struct {
		name   string
		user   string
		hash   []byte
		ended  []string // of the sessions below, by token
		remain []string
	}{
		{"one token", "u-alice", fakeTokenHash("token-alice"), []string{"token-alice"}, []string{"alice-2", "token-bob"}},
		{"every token", "u-alice", nil, []string{"token-alice", "alice-2"}, []string{"token-bob"}},
		{"unknown token", "u-alice", fakeTokenHash("nope"), nil, []string{"token-alice", "alice-2", "token-bob"}},
		{"another user's token", "u-bob", fakeTokenHash("token-alice"), nil, []string{"token-alice", "alice-2", "token-bob"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			alice := e.chat.addUser("alice")
			e.chat.addUser("bob")
			e.chat.addToken(alice, "alice-2", time.Now().Add(time.Hour))
			sessions := map[string][]*client{}
			for _, token := range []string{"token-alice", "alice-2", "token-bob"} {
				for _, tr := range transports {
					c := e.dial(t, tr)
					c.connectToken(token)
					sessions[token] = append(sessions[token], c)
				}
			}
			e.srv.Revoke(tt.user, tt.hash)
			for _, token := range tt.ended {
				for _, c := range sessions[token] {
					c.expectRefused(parley.CodeUnauthorized, "the access token was revoked")
				}
			}
			for _, token := range tt.remain {
				for _, c := range sessions[token] {
					c.expectAlive()
				}
			}
		})
	}
}

// TestRevokeDuringConnect checks a CONNECT whose token is revoked after
// it was checked and before its session counted as the user's: it is
// refused, not connected on a revoked token.
func TestRevokeDuringConnect(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		alice := e.chat.addUser("alice")
		checked, revoked := make(chan struct{}), make(chan struct{})
		var once sync.Once
		e.chat.mu.Lock()
		e.chat.authHook = func(string) {
			once.Do(func() {
				close(checked)
				<-revoked
			})
		}
		e.chat.mu.Unlock()
		c := e.dial(t, tr)
		c.send(connectFrame)
		<-checked
		e.chat.revoke("token-alice")
		e.srv.Revoke(alice.ID, fakeTokenHash("token-alice"))
		close(revoked)
		f := c.expect("ERROR", "code:"+parley.CodeUnauthorized)
		t.Logf("refused: %s", f.Body)
		c.expectClosed()
	})
}

// fakeTimer is one expiry timer started through the injected clock.
type fakeTimer struct {
	d       time.Duration
	fire    func()
	stopped chan struct{}
}

// TestTokenExpiry checks that a session ends with ERROR unauthorized
// when its token expires, at the token's expiry, and that a session that
// ends first stops its timer.
func TestTokenExpiry(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	timers := make(chan *fakeTimer, 4)
	cfg := Config{
		now: func() time.Time { return t0 },
		afterFunc: func(d time.Duration, f func()) func() bool {
			ft := &fakeTimer{d: d, fire: f, stopped: make(chan struct{})}
			timers <- ft
			var once sync.Once
			return func() bool { once.Do(func() { close(ft.stopped) }); return true }
		},
	}
	forEachTransport(t, cfg, func(t *testing.T, e *env, tr string) {
		alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
		e.chat.addToken(alice, "short", t0.Add(90*time.Minute))
		e.chat.addToken(bob, "long", t0.Add(48*time.Hour))

		a := e.dial(t, tr)
		a.connectToken("short")
		at := <-timers
		if at.d != 90*time.Minute {
			t.Errorf("expiry timer of a token expiring in 90m = %v, want 90m", at.d)
		}
		b := e.dial(t, tr)
		b.connectToken("long")
		bt := <-timers
		if bt.d != 48*time.Hour {
			t.Errorf("expiry timer of a token expiring in 48h = %v, want 48h", bt.d)
		}

		at.fire()
		a.expectRefused(parley.CodeUnauthorized, "access token expired")
		b.expectAlive()

		b.send(frame("DISCONNECT", "", "receipt:bye"))
		b.expect("RECEIPT", "receipt-id:bye")
		b.expectClosed()
		<-bt.stopped // a closed session stops its expiry timer
	})
}
