package rest_test

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"parley"
	"parley/parleytest"
	"parley/ratelimit"
	"parley/rest"
)

// gatedChat is a fakeChat whose password checks are counted and held
// until the gate opens, so that a test can have many logins in flight at
// once.
type gatedChat struct {
	*fakeChat
	mu       sync.Mutex    // guards gate
	gate     chan struct{} // closed: checks go on
	checks   atomic.Int64  // password checks begun
	inside   atomic.Int64  // checks held at the gate now
	mostHeld atomic.Int64  // the most held at once
}

func newGatedChat() *gatedChat {
	c := &gatedChat{fakeChat: newFakeChat(), gate: make(chan struct{})}
	close(c.gate)
	return c
}

// shut holds the checks that begin from now on at the gate.
func (c *gatedChat) shut() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gate = make(chan struct{})
}

// open lets the checks held at the gate go on, and those after.
func (c *gatedChat) open() {
	c.mu.Lock()
	defer c.mu.Unlock()
	close(c.gate)
}

func (c *gatedChat) Login(ctx context.Context, name, password string) (string, parley.User, error) {
	c.checks.Add(1)
	n := c.inside.Add(1)
	for m := c.mostHeld.Load(); n > m && !c.mostHeld.CompareAndSwap(m, n); m = c.mostHeld.Load() {
	}
	c.mu.Lock()
	gate := c.gate
	c.mu.Unlock()
	<-gate
	c.inside.Add(-1)
	return c.fakeChat.Login(ctx, name, password)
}

// concurrentEnv is a handler with limitEnv's login limits over a gated
// chat, and its metrics.
type concurrentEnv struct {
	*limitEnv
	chat *gatedChat
	reg  *prometheus.Registry
}

func newConcurrentEnv(t *testing.T, cfg rest.Config) *concurrentEnv {
	t.Helper()
	c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	e := &concurrentEnv{chat: newGatedChat(), reg: prometheus.NewRegistry()}
	cfg.Chat = e.chat
	cfg.LoginByAddress = ratelimit.NewBackoff(ratelimit.BackoffConfig{Free: 6, Base: time.Second, Max: 15 * time.Minute, Now: c.Now})
	cfg.LoginByName = ratelimit.NewBackoff(ratelimit.BackoffConfig{Free: 3, Base: time.Second, Max: 15 * time.Minute, Now: c.Now})
	cfg.Now = c.Now
	cfg.Registerer = e.reg
	e.limitEnv = &limitEnv{t: t, h: rest.New(cfg), clock: c}
	return e
}

// metric returns the value of the gauge or counter name (with the label
// limit=label, if not empty), or 0 if there is none.
func (e *concurrentEnv) metric(name, label string) float64 {
	e.t.Helper()
	families, err := e.reg.Gather()
	if err != nil {
		e.t.Fatalf("gather metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if label != "" && (len(m.GetLabel()) == 0 || m.GetLabel()[0].GetValue() != label) {
				continue
			}
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

// loginAll logs in every client of cs at once with its name and
// password. It opens the gate once every login is either held at it,
// waiting in line (parley_http_logins_waiting) or answered, and returns
// the answers.
func (e *concurrentEnv) loginAll(cs []*client, names []string, password string) []answer {
	e.t.Helper()
	answers := make([]answer, len(cs))
	e.chat.shut()
	var answered atomic.Int64
	var wg sync.WaitGroup
	for i := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i] = e.login(cs[i], names[i], password)
			answered.Add(1)
		}()
	}
	if !parleytest.Poll(time.Minute, func() bool {
		return e.chat.inside.Load()+int64(e.metric("parley_http_logins_waiting", ""))+answered.Load() >= int64(len(cs))
	}) {
		e.t.Fatalf("logins never all arrived: %d held, %v waiting, %d answered of %d",
			e.chat.inside.Load(), e.metric("parley_http_logins_waiting", ""), answered.Load(), len(cs))
	}
	e.chat.open()
	wg.Wait()
	return answers
}

// TestLoginConcurrentRightPasswords: 100 users behind one address who log
// in at the same moment, every password right, all get in: none of them
// failed, so none is refused for failed logins, and at most the address's
// free failures check a password at once.
func TestLoginConcurrentRightPasswords(t *testing.T) {
	e := newConcurrentEnv(t, rest.Config{})
	var cs []*client
	var names []string
	for i := range 100 {
		name := fmt.Sprintf("user%03d", i)
		if _, err := e.chat.Register(context.Background(), name, password); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, &client{addr: fmt.Sprintf("203.0.113.1:%d", 1000+i)})
		names = append(names, name)
	}
	got := map[string]int{}
	for _, a := range e.loginAll(cs, names, password) {
		if a.status != created {
			got[fmt.Sprint(a.status, " ", a.body)]++
		}
	}
	for answer, n := range got {
		t.Errorf("%d of 100 right-password logins from one address got %s, want 201", n, answer)
	}
	if n := e.chat.mostHeld.Load(); n > 6 {
		t.Errorf("%d password checks from one address at once, want at most its 6 free failures", n)
	}
	// Successes left nothing on record: the address still has its 6.
	for i := range 6 {
		want(t, fmt.Sprint("free failure ", i+1, " after the successes"), e.login(cs[0], fmt.Sprint("nobody", i), wrong), denied, "")
	}
	want(t, "then a wait", e.login(cs[0], "nobodyz", wrong), tooMany, "1")
}

// TestLoginParallelGuessers: 16 guessers at one name, from 16 addresses
// at once, get no more passwords checked than the name's free failures,
// then one backed-off try per wait; the others are refused as failed
// logins, never as busy.
func TestLoginParallelGuessers(t *testing.T) {
	e := newConcurrentEnv(t, rest.Config{})
	e.mustRegister("alice")
	guessers := func() ([]*client, []string) {
		var cs []*client
		var names []string
		for i := range 16 {
			cs = append(cs, &client{addr: fmt.Sprintf("198.51.100.%d:1", i+1)})
			names = append(names, "alice")
		}
		return cs, names
	}
	round := func(what string, wantChecks int64, retryAfter string) {
		t.Helper()
		before := e.chat.checks.Load()
		cs, names := guessers()
		var refused int
		for _, a := range e.loginAll(cs, names, wrong) {
			switch a.status {
			case denied:
			case tooMany:
				want(t, what+": a refused guess", a, tooMany, retryAfter)
				refused++
			default:
				t.Errorf("%s: a guess got %d %s, want 401 or 429", what, a.status, a.body)
			}
		}
		if got := e.chat.checks.Load() - before; got != wantChecks || refused != 16-int(wantChecks) {
			t.Errorf("%s: %d passwords checked, %d refused; want %d checked (free plus backed-off), %d refused", what, got, refused, wantChecks, 16-wantChecks)
		}
	}
	round("16 guessers", 3, "1")
	e.clock.Advance(time.Second)
	round("16 guessers after the wait", 1, "2")
	if n := e.metric("parley_http_limited_total", "login_busy"); n != 0 {
		t.Errorf("%v guesses refused as busy, want 0", n)
	}
}

// TestLoginBusy: a login that waits in line longer than LoginWait is
// answered 503 unavailable "server busy" with Retry-After, and counts no
// failure.
func TestLoginBusy(t *testing.T) {
	e := newConcurrentEnv(t, rest.Config{LoginWait: time.Millisecond, LoginConcurrency: 6})
	e.mustRegister("alice")
	e.chat.shut()
	var wg sync.WaitGroup
	for i := range 6 { // the address's free failures, all in flight at the gate
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := &client{addr: fmt.Sprintf("203.0.113.7:%d", i+1)}
			want(t, "a held wrong password", e.login(c, fmt.Sprint("user", i), wrong), denied, "")
		}()
	}
	if !parleytest.Poll(time.Minute, func() bool { return e.chat.inside.Load() >= 6 }) {
		t.Fatalf("%d logins held at the gate, want 6", e.chat.inside.Load())
	}
	a := e.login(&client{addr: "203.0.113.7:99"}, "alice", password)
	if a.status != http.StatusServiceUnavailable || a.code != "unavailable" || a.retryAfter != "5" {
		t.Errorf("a login past its wait in line = %d %s (Retry-After %q), want 503 unavailable with Retry-After 5", a.status, a.body, a.retryAfter)
	}
	e.chat.open()
	wg.Wait()
	if n := e.metric("parley_http_limited_total", "login_busy"); n != 1 {
		t.Errorf("parley_http_limited_total{limit=login_busy} = %v, want 1", n)
	}
	// The 6 failed; the busy one counted nothing: the address now waits.
	want(t, "after 6 failures", e.login(&client{addr: "203.0.113.7:100"}, "alice", password), tooMany, "1")
}

// TestLoginNodeSlots: however many addresses log in at once, no more than
// LoginConcurrency passwords are checked at once on the node; the others
// wait their turn and get in.
func TestLoginNodeSlots(t *testing.T) {
	e := newConcurrentEnv(t, rest.Config{LoginConcurrency: 2})
	var cs []*client
	var names []string
	for i := range 10 {
		name := fmt.Sprintf("user%03d", i)
		if _, err := e.chat.Register(context.Background(), name, password); err != nil {
			t.Fatal(err)
		}
		cs = append(cs, &client{addr: fmt.Sprintf("198.51.100.%d:1", i+1)})
		names = append(names, name)
	}
	for i, a := range e.loginAll(cs, names, password) {
		want(t, fmt.Sprint("login ", i+1), a, created, "")
	}
	if n := e.chat.mostHeld.Load(); n > 2 {
		t.Errorf("%d passwords checked at once, want at most LoginConcurrency (2)", n)
	}
}
