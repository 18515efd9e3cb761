package oidcauth_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"parley/oidcauth"
	"parley/oidcauth/oidctest"
)

const redirect = "https://chat.example/api/auth/oidc/callback"

var key = []byte("0123456789abcdef0123456789abcdef")

func newRP(t *testing.T, op *oidctest.Provider, key []byte, now func() time.Time) *oidcauth.RP {
	t.Helper()
	rp, err := oidcauth.New(oidcauth.Config{
		Issuer: op.URL, ClientID: op.ClientID, ClientSecret: op.ClientSecret, RedirectURL: redirect,
		StateKey: key, Now: now,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

// authorize sends the browser to authURL and returns the callback's query.
func authorize(t *testing.T, authURL string) url.Values {
	t.Helper()
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc, err := url.Parse(res.Header.Get("Location"))
	if err != nil || !strings.HasPrefix(loc.String(), redirect) {
		t.Fatalf("authorize: %d to %q, want a redirect to %s", res.StatusCode, loc, redirect)
	}
	return loc.Query()
}

// begin starts a sign-in at rp and goes through the provider.
func begin(t *testing.T, rp *oidcauth.RP) (query url.Values, signed string) {
	t.Helper()
	authURL, signed, err := rp.Begin(context.Background())
	if err != nil {
		t.Fatalf("Begin: %v", err)
	}
	u, _ := url.Parse(authURL)
	if q := u.Query(); q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" || q.Get("nonce") == "" || q.Get("state") == "" {
		t.Fatalf("authorization URL %s: want PKCE S256, a nonce and a state", authURL)
	}
	return authorize(t, authURL), signed
}

func reason(err error) string {
	var e *oidcauth.Error
	if errors.As(err, &e) {
		return e.Reason
	}
	return "not an *oidcauth.Error: " + err.Error()
}

func TestSignIn(t *testing.T) {
	op := oidctest.New()
	defer op.Close()
	rp := newRP(t, op, key, nil)
	q, signed := begin(t, rp)
	id, err := rp.Finish(context.Background(), q, signed)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if want := (oidcauth.Identity{Issuer: op.URL, Subject: "alice-sub", Name: "alice"}); id != want {
		t.Errorf("Finish = %+v, want %+v", id, want)
	}
}

// TestOtherNode: a node that shares the state key finishes the sign-in
// another began (cluster mode: any node may get the callback); one with
// another key refuses it.
func TestOtherNode(t *testing.T) {
	op := oidctest.New()
	defer op.Close()
	q, signed := begin(t, newRP(t, op, key, nil))
	if _, err := newRP(t, op, []byte("another key of 32 bytes, or so.."), nil).Finish(context.Background(), q, signed); reason(err) != oidcauth.ReasonBadState {
		t.Errorf("Finish at a node with another key: %v, want %s", err, oidcauth.ReasonBadState)
	}
	if _, err := newRP(t, op, key, nil).Finish(context.Background(), q, signed); err != nil {
		t.Errorf("Finish at another node with the same key: %v", err)
	}
}

func TestRefusals(t *testing.T) {
	now := time.Now()
	clock := func() time.Time { return now }
	for _, tc := range []struct {
		name   string
		setup  func(op *oidctest.Provider)
		finish func(rp *oidcauth.RP, q url.Values, signed string) error
		want   string
	}{
		{name: "no state cookie", want: oidcauth.ReasonNoState,
			finish: func(rp *oidcauth.RP, q url.Values, _ string) error {
				_, err := rp.Finish(context.Background(), q, "")
				return err
			}},
		{name: "state of another sign-in", want: oidcauth.ReasonBadState,
			finish: func(rp *oidcauth.RP, q url.Values, _ string) error {
				_, other, _ := rp.Begin(context.Background())
				_, err := rp.Finish(context.Background(), q, other)
				return err
			}},
		{name: "callback state altered", want: oidcauth.ReasonBadState,
			finish: func(rp *oidcauth.RP, q url.Values, signed string) error {
				q.Set("state", q.Get("state")+"x")
				_, err := rp.Finish(context.Background(), q, signed)
				return err
			}},
		{name: "cookie forged", want: oidcauth.ReasonBadState,
			finish: func(rp *oidcauth.RP, q url.Values, signed string) error {
				payload, sig, _ := strings.Cut(signed, ".")
				_, err := rp.Finish(context.Background(), q, payload+"A."+sig)
				return err
			}},
		{name: "expired", want: oidcauth.ReasonExpired,
			finish: func(rp *oidcauth.RP, q url.Values, signed string) error {
				now = now.Add(oidcauth.DefaultStateTTL + time.Second)
				defer func() { now = now.Add(-oidcauth.DefaultStateTTL - time.Second) }()
				_, err := rp.Finish(context.Background(), q, signed)
				return err
			}},
		{name: "replayed callback", want: oidcauth.ReasonProvider,
			finish: func(rp *oidcauth.RP, q url.Values, signed string) error {
				if _, err := rp.Finish(context.Background(), q, signed); err != nil {
					return err
				}
				_, err := rp.Finish(context.Background(), q, signed)
				return err
			}},
		{name: "access denied", want: oidcauth.ReasonDenied, setup: func(op *oidctest.Provider) { op.Deny("access_denied") }},
		{name: "wrong aud", want: oidcauth.ReasonToken, setup: func(op *oidctest.Provider) { op.Forge("someone-else", "", "") }},
		{name: "wrong iss", want: oidcauth.ReasonToken, setup: func(op *oidctest.Provider) { op.Forge("", "https://evil.example", "") }},
		{name: "wrong nonce", want: oidcauth.ReasonToken, setup: func(op *oidctest.Provider) { op.Forge("", "", "another-nonce") }},
		{name: "provider down at the callback", want: oidcauth.ReasonProvider,
			finish: func(rp *oidcauth.RP, q url.Values, signed string) error {
				return errors.New("see below")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			op := oidctest.New()
			defer op.Close()
			rp := newRP(t, op, key, clock)
			if tc.setup != nil {
				tc.setup(op)
			}
			q, signed := begin(t, rp)
			var err error
			switch {
			case tc.name == "provider down at the callback":
				op.Close()
				_, err = rp.Finish(context.Background(), q, signed)
			case tc.finish != nil:
				err = tc.finish(rp, q, signed)
			default:
				_, err = rp.Finish(context.Background(), q, signed)
			}
			if err == nil || reason(err) != tc.want {
				t.Errorf("Finish: %v, want reason %s", err, tc.want)
			}
		})
	}
}

func TestProviderDownAtStart(t *testing.T) {
	op := oidctest.New()
	op.Close()
	rp := newRP(t, op, key, nil)
	if _, _, err := rp.Begin(context.Background()); reason(err) != oidcauth.ReasonProvider {
		t.Errorf("Begin with the provider down: %v, want %s", err, oidcauth.ReasonProvider)
	}
}

func TestNewChecks(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  oidcauth.Config
	}{
		{"no issuer", oidcauth.Config{ClientID: "c", RedirectURL: redirect, StateKey: key}},
		{"no client", oidcauth.Config{Issuer: "https://op", RedirectURL: redirect, StateKey: key}},
		{"no redirect", oidcauth.Config{Issuer: "https://op", ClientID: "c", StateKey: key}},
		{"relative redirect", oidcauth.Config{Issuer: "https://op", ClientID: "c", RedirectURL: "/cb", StateKey: key}},
		{"short key", oidcauth.Config{Issuer: "https://op", ClientID: "c", RedirectURL: redirect, StateKey: key[:8]}},
	} {
		if _, err := oidcauth.New(tc.cfg); err == nil {
			t.Errorf("New(%s) = nil error, want one", tc.name)
		}
	}
}

// TestDiscoveryBackoff: while the provider is down, a failed discovery
// is not tried again for DiscoveryRetry (sign-ins meanwhile fail at once,
// without a request), and after it, the next sign-in discovers again.
func TestDiscoveryBackoff(t *testing.T) {
	op := oidctest.New()
	defer op.Close()
	var hits atomic.Int64
	var down atomic.Bool
	down.Store(true)
	opURL, _ := url.Parse(op.URL)
	proxy := httputil.NewSingleHostReverseProxy(opURL)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if down.Load() {
			http.Error(w, "down", http.StatusServiceUnavailable)
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	defer front.Close()
	now := time.Now()
	rp, err := oidcauth.New(oidcauth.Config{
		Issuer: op.URL, ClientID: op.ClientID, RedirectURL: redirect, StateKey: key,
		Now:        func() time.Time { return now },
		HTTPClient: &http.Client{Transport: rewrite{to: front.URL}},
	})
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		if _, _, err := rp.Begin(context.Background()); reason(err) != oidcauth.ReasonProvider {
			t.Fatalf("Begin with the provider down: %v, want %s", err, oidcauth.ReasonProvider)
		}
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("discoveries while down = %d, want 1 (the others wait for DiscoveryRetry)", n)
	}
	down.Store(false)
	now = now.Add(oidcauth.DiscoveryRetry + time.Second)
	if _, _, err := rp.Begin(context.Background()); err != nil {
		t.Errorf("Begin after DiscoveryRetry, the provider up: %v", err)
	}
}

// rewrite sends every request to another base URL.
type rewrite struct{ to string }

func (r rewrite) RoundTrip(req *http.Request) (*http.Response, error) {
	u, _ := url.Parse(r.to)
	req = req.Clone(req.Context())
	req.URL.Scheme, req.URL.Host = u.Scheme, u.Host
	return http.DefaultTransport.RoundTrip(req)
}
