package rest_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"testing"
	"time"

	"parley/ratelimit"
	"parley/rest"
)

// limitEnv is a handler with the sign-up and login limits on a fake
// clock.
type limitEnv struct {
	t     *testing.T
	h     *rest.Handler
	clock *clock
}

func newLimitEnv(t *testing.T, trusted string) *limitEnv {
	t.Helper()
	proxies, err := rest.ParseTrustedProxies(trusted)
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)}
	h := rest.New(rest.Config{
		Chat:           newFakeChat(),
		SignupLimit:    ratelimit.New(ratelimit.Config{Rate: 2.0 / 60, Burst: 4, Now: c.Now}),
		LoginByAddress: ratelimit.NewBackoff(ratelimit.BackoffConfig{Free: 6, Base: time.Second, Max: 15 * time.Minute, Now: c.Now}),
		LoginByName:    ratelimit.NewBackoff(ratelimit.BackoffConfig{Free: 3, Base: time.Second, Max: 15 * time.Minute, Now: c.Now}),
		TrustedProxies: proxies,
		Now:            c.Now,
	})
	return &limitEnv{t: t, h: h, clock: c}
}

// client is a caller from one address with a cookie jar of one cookie.
type client struct {
	addr   string // "ip:port"
	xff    string // X-Forwarded-For, if any
	device *http.Cookie
}

// answer is what a request got: status, error code, Retry-After, body.
type answer struct {
	status     int
	code       string
	retryAfter string
	body       string
}

func (e *limitEnv) post(c *client, path, name, password string) answer {
	e.t.Helper()
	data, _ := json.Marshal(map[string]string{"name": name, "password": password})
	req := httptest.NewRequest("POST", path, bytes.NewReader(data))
	req.RemoteAddr = c.addr
	if c.xff != "" {
		req.Header.Set("X-Forwarded-For", c.xff)
	}
	if c.device != nil {
		req.AddCookie(c.device)
	}
	rec := httptest.NewRecorder()
	e.h.ServeHTTP(rec, req)
	for _, ck := range rec.Result().Cookies() {
		if ck.Name == "parley_device" {
			c.device = ck
		}
	}
	var body errorBody
	json.Unmarshal(rec.Body.Bytes(), &body)
	return answer{rec.Code, body.Error.Code, rec.Header().Get("Retry-After"), rec.Body.String()}
}

func (e *limitEnv) login(c *client, name, password string) answer {
	e.t.Helper()
	return e.post(c, "/api/tokens", name, password)
}

func (e *limitEnv) mustRegister(name string) {
	e.t.Helper()
	c := &client{addr: "198.18.0.1:1"} // an address of its own
	if a := e.post(c, "/api/users", name, "correct horse"); a.status != http.StatusCreated {
		e.t.Fatalf("register %s = %+v", name, a)
	}
	e.clock.Advance(time.Minute) // keep the registering address under its limit
}

// want checks an answer: status and, for a 429, its Retry-After.
func want(t *testing.T, what string, got answer, status int, retryAfter string) {
	t.Helper()
	if got.status != status || status == http.StatusTooManyRequests && (got.code != "rate_limited" || got.retryAfter != retryAfter) {
		t.Errorf("%s = %d %s (Retry-After %q), want %d (Retry-After %q)", what, got.status, strings.TrimSpace(got.body), got.retryAfter, status, retryAfter)
	}
}

const (
	created  = http.StatusCreated
	denied   = http.StatusUnauthorized
	tooMany  = http.StatusTooManyRequests
	password = "correct horse"
	wrong    = "wrong horse"
)

func TestLoginBackoffPerName(t *testing.T) {
	e := newLimitEnv(t, "")
	e.mustRegister("alice")
	a := &client{addr: "203.0.113.1:1"}
	for i := range 3 {
		want(t, "wrong password, free try "+string(rune('1'+i)), e.login(a, "alice", wrong), denied, "")
	}
	// Even the right password waits: the name is waiting, not checked.
	want(t, "the right password while the name waits", e.login(a, "alice", password), tooMany, "1")
	e.clock.Advance(400 * time.Millisecond)
	want(t, "still waiting", e.login(a, "alice", wrong), tooMany, "1")
	e.clock.Advance(600 * time.Millisecond)
	want(t, "after the wait", e.login(a, "alice", wrong), denied, "")
	want(t, "the next wait doubles", e.login(a, "alice", wrong), tooMany, "2")
	e.clock.Advance(2 * time.Second)
	want(t, "after 2 s", e.login(a, "alice", wrong), denied, "")
	want(t, "then 4 s", e.login(a, "alice", wrong), tooMany, "4")

	// From other addresses the name waits too.
	b := &client{addr: "203.0.113.2:1"}
	want(t, "another address, same name", e.login(b, "alice", password), tooMany, "4")
	e.clock.Advance(4 * time.Second)
	want(t, "the right password after the wait", e.login(b, "alice", password), created, "")
	// A success forgets the name's failures (seen from a browser without
	// the device cookie that b now has).
	c := &client{addr: "203.0.113.3:1"}
	for i := range 3 {
		want(t, "a free failure again "+string(rune('1'+i)), e.login(c, "alice", wrong), denied, "")
	}
	want(t, "then the first wait again", e.login(c, "alice", wrong), tooMany, "1")
}

// TestLoginBackoffCap: the wait stops growing at the cap, and failures
// are forgiven with time.
func TestLoginBackoffCap(t *testing.T) {
	e := newLimitEnv(t, "")
	e.mustRegister("alice")
	for i := 0; i < 20; i++ {
		// A fresh address each time, so that only the name's wait shows.
		c := &client{addr: netip.AddrFrom4([4]byte{198, 51, 100, byte(i)}).String() + ":1"}
		if got := e.login(c, "alice", wrong); got.status == tooMany {
			secs, _ := time.ParseDuration(got.retryAfter + "s")
			if secs > 15*time.Minute {
				t.Fatalf("failure %d: Retry-After %s, over the 15 min cap", i, got.retryAfter)
			}
			e.clock.Advance(secs)
			want(t, "after the wait", e.login(c, "alice", wrong), denied, "")
		}
	}
	want(t, "at the cap", e.login(&client{addr: "192.0.2.9:1"}, "alice", wrong), tooMany, "900")
	// Left alone, the name comes back: one failure forgiven per 15 min.
	e.clock.Advance(24 * time.Hour)
	c := &client{addr: "192.0.2.10:1"}
	for range 3 {
		want(t, "a free failure a day later", e.login(c, "alice", wrong), denied, "")
	}
	want(t, "the first wait a day later", e.login(c, "alice", wrong), tooMany, "1")
}

// TestLoginUnknownNameSameAnswers: a name that does not exist is slowed
// down exactly like one that does, with the same answers.
func TestLoginUnknownNameSameAnswers(t *testing.T) {
	e := newLimitEnv(t, "")
	e.mustRegister("alice")
	run := func(name string) []string {
		c := &client{addr: "203.0.113.50:1"}
		var out []string
		for range 5 {
			a := e.login(c, name, wrong)
			out = append(out, a.retryAfter+" "+a.body)
		}
		e.clock.Advance(24 * time.Hour) // forgive both the address and the name
		return out
	}
	known, unknown := run("alice"), run("nobody")
	for i := range known {
		if known[i] != unknown[i] {
			t.Errorf("attempt %d: alice (exists) got %q, nobody (unknown) got %q; want the same", i+1, known[i], unknown[i])
		}
	}
}

func TestLoginBackoffPerAddress(t *testing.T) {
	e := newLimitEnv(t, "")
	for _, n := range []string{"alice", "bob"} {
		e.mustRegister(n)
	}
	a := &client{addr: "203.0.113.1:1"}
	for i := range 6 {
		// A new name each time: only the address counts them all.
		want(t, "a free failure of the address", e.login(a, "user"+string(rune('a'+i)), wrong), denied, "")
	}
	want(t, "the address's next attempt", e.login(a, "bob", password), tooMany, "1")
	want(t, "another address", e.login(&client{addr: "203.0.113.2:1"}, "bob", password), created, "")
	// A success does not clear the address's failures: an attacker with
	// an account of their own cannot wash their address with it.
	e.clock.Advance(time.Second)
	want(t, "a success after the wait", e.login(a, "bob", password), created, "")
	want(t, "the address still waits after its success", e.login(a, "usery", wrong), denied, "")
	want(t, "and waits longer", e.login(a, "userz", wrong), tooMany, "2")
}

// TestLoginIPv6Prefix: the addresses of one IPv6 /64 share their limit.
func TestLoginIPv6Prefix(t *testing.T) {
	e := newLimitEnv(t, "")
	for i := range 6 {
		c := &client{addr: "[2001:db8:1:2::" + string(rune('a'+i)) + "]:1"}
		want(t, "a failure from the /64", e.login(c, "user"+string(rune('a'+i)), wrong), denied, "")
	}
	want(t, "another address of the /64", e.login(&client{addr: "[2001:db8:1:2:ffff::1]:1"}, "x_y_z", wrong), tooMany, "1")
	want(t, "another /64", e.login(&client{addr: "[2001:db8:1:3::1]:1"}, "x_y_z", wrong), denied, "")
}

// TestLoginDeviceCookie: the owner's browser, which logged in before, gets
// in while an attacker keeps the name (or the address) waiting; the
// cookie is no use for another name, and a device that fails waits too.
func TestLoginDeviceCookie(t *testing.T) {
	e := newLimitEnv(t, "")
	e.mustRegister("alice")
	e.mustRegister("mallory")
	owner := &client{addr: "203.0.113.1:1"}
	want(t, "the owner logs in", e.login(owner, "alice", password), created, "")
	if owner.device == nil {
		t.Fatal("no device cookie after a login")
	}
	if d := owner.device; !d.HttpOnly || d.SameSite != http.SameSiteStrictMode || d.Path != "/api/tokens" {
		t.Errorf("device cookie %+v, want HttpOnly, SameSite=Strict, Path=/api/tokens", d)
	}
	attacker := &client{addr: "198.51.100.1:1"}
	want(t, "the attacker logs in as himself", e.login(attacker, "mallory", password), created, "")
	for range 3 {
		e.login(attacker, "alice", wrong)
	}
	want(t, "the attacker waits", e.login(attacker, "alice", wrong), tooMany, "1")
	want(t, "a new browser of the owner waits", e.login(&client{addr: "203.0.113.1:2"}, "alice", password), tooMany, "1")
	want(t, "the owner's browser gets in", e.login(owner, "alice", password), created, "")
	want(t, "the attacker's cookie for mallory is no use for alice", e.login(attacker, "alice", password), tooMany, "1")

	// Sharing the attacker's address does not hold the owner back either.
	for range 6 {
		e.login(attacker, "x"+attacker.addr[:3], wrong)
		e.clock.Advance(15 * time.Minute)
	}
	ownerThere := &client{addr: attacker.addr, device: owner.device}
	want(t, "the owner's browser at the attacker's address", e.login(ownerThere, "alice", password), created, "")

	// A forged or expired cookie is no cookie.
	forged := *ownerThere.device
	forged.Value = strings.Replace(forged.Value, ".", "x.", 1)
	for range 3 {
		e.login(&client{addr: "192.0.2.200:1"}, "alice", wrong)
	}
	want(t, "a forged cookie", e.login(&client{addr: "192.0.2.201:1", device: &forged}, "alice", password), tooMany, "1")
	old := &client{addr: "192.0.2.202:1", device: ownerThere.device}
	e.clock.Advance(31 * 24 * time.Hour)
	for range 3 {
		e.login(&client{addr: "192.0.2.203:1"}, "alice", wrong)
	}
	want(t, "an expired cookie", e.login(old, "alice", password), tooMany, "1")

	// A device that fails has a budget of its own.
	dev := &client{addr: "192.0.2.204:1"}
	e.clock.Advance(24 * time.Hour)
	want(t, "a fresh login", e.login(dev, "alice", password), created, "")
	for range 3 {
		want(t, "the device fails", e.login(dev, "alice", wrong), denied, "")
	}
	want(t, "the device waits", e.login(dev, "alice", password), tooMany, "1")
	want(t, "the name does not", e.login(&client{addr: "192.0.2.205:1"}, "alice", password), created, "")
}

func TestSignupLimit(t *testing.T) {
	e := newLimitEnv(t, "")
	a := &client{addr: "203.0.113.1:1"}
	for i := range 4 {
		want(t, "a sign-up within the burst", e.post(a, "/api/users", "user"+string(rune('a'+i)), password), created, "")
	}
	want(t, "over the burst", e.post(a, "/api/users", "usere", password), tooMany, "30")
	want(t, "an invalid sign-up is refused all the same", e.post(a, "/api/users", "x", ""), tooMany, "30")
	want(t, "another address", e.post(&client{addr: "203.0.113.2:1"}, "/api/users", "userf", password), created, "")
	e.clock.Advance(30 * time.Second)
	want(t, "30 s later", e.post(a, "/api/users", "userg", password), created, "")
	want(t, "and then", e.post(a, "/api/users", "userh", password), tooMany, "30")
}

// TestLimitsBehindProxy: behind a trusted proxy the client address comes
// from X-Forwarded-For; from anyone else the header is ignored, so a
// spoofed one does not buy a fresh budget.
func TestLimitsBehindProxy(t *testing.T) {
	e := newLimitEnv(t, "10.0.0.0/8")
	for i := range 4 {
		c := &client{addr: "203.0.113.1:1", xff: "198.51.100." + string(rune('1'+i))}
		want(t, "a sign-up with a spoofed header", e.post(c, "/api/users", "spoof"+string(rune('a'+i)), password), created, "")
	}
	want(t, "the spoofing peer is over its burst", e.post(&client{addr: "203.0.113.1:1", xff: "198.51.100.9"}, "/api/users", "spoofz", password), tooMany, "30")
	for i := range 4 {
		c := &client{addr: "10.0.0.2:1", xff: "198.51.100.1"}
		want(t, "a sign-up through the proxy", e.post(c, "/api/users", "proxied"+string(rune('a'+i)), password), created, "")
	}
	want(t, "that client is over its burst", e.post(&client{addr: "10.0.0.2:1", xff: "198.51.100.1"}, "/api/users", "proxiedz", password), tooMany, "30")
	want(t, "another client through the same proxy", e.post(&client{addr: "10.0.0.2:1", xff: "198.51.100.2"}, "/api/users", "other", password), created, "")
}
