package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"parley/chat"
	"parley/parleytest"
)

// OpenID Connect sign-in end to end against ORY Hydra, a real provider
// (.ci/run installs it and sets PARLEY_TEST_HYDRA to its binary), with a
// login and consent app of the test's own that signs a fixed user in
// through Hydra's admin API.

// hydra is a running Hydra (in-memory database, plain HTTP on loopback:
// --dev) and its login and consent app.
type hydra struct {
	issuer, admin string
	app           *httptest.Server
	// deny makes the login app refuse the next sign-ins (access_denied).
	deny atomic.Bool
}

const (
	hydraSubject  = "hydra-alice-sub"
	hydraName     = "hydra-alice"
	hydraClientID = "parley-test"
	hydraSecret   = "parley-test-client-secret"
)

// freePort returns a loopback port free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startHydra starts Hydra and its login app, or skips the test.
func startHydra(t *testing.T) *hydra {
	t.Helper()
	bin := os.Getenv("PARLEY_TEST_HYDRA")
	if bin == "" {
		t.Skip("OpenID Connect tests against ORY Hydra need PARLEY_TEST_HYDRA, the hydra binary (.ci/run installs it and sets it)")
	}
	h := &hydra{}
	h.app = httptest.NewServer(http.HandlerFunc(h.loginApp))
	t.Cleanup(h.app.Close)
	pub, adm := freePort(t), freePort(t)
	h.issuer, h.admin = fmt.Sprintf("http://127.0.0.1:%d", pub), fmt.Sprintf("http://127.0.0.1:%d", adm)
	cmd := exec.Command(bin, "serve", "all", "--dev")
	cmd.Env = append(os.Environ(), "DSN=memory", "URLS_SELF_ISSUER="+h.issuer,
		"URLS_LOGIN="+h.app.URL+"/login", "URLS_CONSENT="+h.app.URL+"/consent",
		"SECRETS_SYSTEM=a-system-secret-for-the-parley-tests", "LOG_LEVEL=warn",
		fmt.Sprintf("SERVE_PUBLIC_PORT=%d", pub), fmt.Sprintf("SERVE_ADMIN_PORT=%d", adm),
		"SERVE_PUBLIC_HOST=127.0.0.1", "SERVE_ADMIN_HOST=127.0.0.1")
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatalf("start hydra: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	if !parleytest.Poll(60*time.Second, func() bool {
		res, err := http.Get(h.admin + "/health/ready")
		if err != nil {
			return false
		}
		res.Body.Close()
		return res.StatusCode == http.StatusOK
	}) {
		t.Fatalf("hydra not ready in 60 s:\n%s", log.String())
	}
	return h
}

// call sends a JSON request to Hydra's admin API and decodes its answer.
func (h *hydra) call(method, path string, body, out any) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequest(method, h.admin+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	if res.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %d %s", method, path, res.StatusCode, raw)
	}
	if out != nil {
		return json.Unmarshal(raw, out)
	}
	return nil
}

// createClient registers Parley's client with its callback URL.
func (h *hydra) createClient(t *testing.T, redirect string) {
	t.Helper()
	if err := h.call("POST", "/admin/clients", map[string]any{
		"client_id": hydraClientID, "client_secret": hydraSecret, "redirect_uris": []string{redirect},
		"grant_types": []string{"authorization_code"}, "response_types": []string{"code"},
		"scope": "openid profile", "token_endpoint_auth_method": "client_secret_basic",
	}, nil); err != nil {
		t.Fatalf("create client: %v", err)
	}
}

// loginApp accepts every login for hydraSubject (or rejects it when
// h.deny is set) and every consent, with the name in the ID token.
func (h *hydra) loginApp(w http.ResponseWriter, r *http.Request) {
	var redirect struct {
		To string `json:"redirect_to"`
	}
	var err error
	switch r.URL.Path {
	case "/login":
		ch := url.QueryEscape(r.URL.Query().Get("login_challenge"))
		if h.deny.Load() {
			err = h.call("PUT", "/admin/oauth2/auth/requests/login/reject?login_challenge="+ch,
				map[string]any{"error": "access_denied", "error_description": "the test user said no"}, &redirect)
		} else {
			err = h.call("PUT", "/admin/oauth2/auth/requests/login/accept?login_challenge="+ch,
				map[string]any{"subject": hydraSubject}, &redirect)
		}
	case "/consent":
		ch := url.QueryEscape(r.URL.Query().Get("consent_challenge"))
		var req struct {
			Scope    []string `json:"requested_scope"`
			Audience []string `json:"requested_access_token_audience"`
		}
		if err = h.call("GET", "/admin/oauth2/auth/requests/consent?consent_challenge="+ch, nil, &req); err == nil {
			err = h.call("PUT", "/admin/oauth2/auth/requests/consent/accept?consent_challenge="+ch, map[string]any{
				"grant_scope": req.Scope, "grant_access_token_audience": req.Audience,
				"session": map[string]any{"id_token": map[string]any{"preferred_username": hydraName}},
			}, &redirect)
		}
	default:
		http.NotFound(w, r)
		return
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	http.Redirect(w, r, redirect.To, http.StatusFound)
}

// balancer is a load balancer in front of the nodes: the sign-in's start
// goes to one node, everything else (the callback) to another.
type balancer struct {
	srv         *httptest.Server
	start, rest atomic.Pointer[Main]
}

func newBalancer(t *testing.T) *balancer {
	b := &balancer{}
	proxy := &httputil.ReverseProxy{Rewrite: func(pr *httputil.ProxyRequest) {
		m := b.rest.Load()
		if pr.In.URL.Path == "/api/auth/oidc/start" {
			m = b.start.Load()
		}
		pr.SetURL(&url.URL{Scheme: "http", Host: m.Addr()})
	}}
	b.srv = httptest.NewServer(proxy)
	t.Cleanup(b.srv.Close)
	return b
}

func (b *balancer) callback() string { return b.srv.URL + "/api/auth/oidc/callback" }

// withHydra is the configuration of a node signing in with h.
func withHydra(h *hydra, redirect string) func(*Config) {
	return func(c *Config) {
		c.OIDC.Issuer, c.OIDC.ClientID, c.OIDC.ClientSecret = h.issuer, hydraClientID, hydraSecret
		c.OIDC.RedirectURL, c.OIDC.Name = redirect, "Hydra"
	}
}

// oidcBrowser follows redirects with cookies, stops at the home page,
// and remembers the last callback URL it went to.
type oidcBrowser struct {
	*http.Client
	callback    string
	stateCookie *http.Cookie // the one sent to the last callback
}

func newOIDCBrowser() *oidcBrowser {
	jar, _ := cookiejar.New(nil)
	b := &oidcBrowser{}
	b.Client = &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == "/api/auth/oidc/callback" {
			b.callback = req.URL.String()
			for _, c := range jar.Cookies(req.URL) {
				if c.Name == "parley_oidc_state" {
					b.stateCookie = c
				}
			}
		}
		if req.URL.Path == "/" {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	return b
}

// land GETs u, following redirects, and returns the fragment of the home
// page it ends at.
func (b *oidcBrowser) land(t *testing.T, u string) string {
	t.Helper()
	res, err := b.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || err != nil || loc.Path != "/" {
		t.Fatalf("GET %s ended with %d to %q: %s", u, res.StatusCode, res.Header.Get("Location"), body)
	}
	return loc.Fragment
}

// session takes the sign-in's token (the web client's POST).
func (b *oidcBrowser) session(t *testing.T, base string) (status int, token string, u user) {
	t.Helper()
	res, err := b.Post(base+"/api/auth/oidc/session", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v struct {
		Token string `json:"token"`
		User  user   `json:"user"`
	}
	json.NewDecoder(res.Body).Decode(&v)
	return res.StatusCode, v.Token, v.User
}

// TestOIDCHydra: sign in through Hydra on one node (SQLite), then the
// refusals: a replayed callback (with and without the spent state
// cookie), and a provider that answers access_denied.
func TestOIDCHydra(t *testing.T) {
	h := startHydra(t)
	lb := newBalancer(t)
	h.createClient(t, lb.callback())
	m := MustOpenMain(t, withHydra(h, lb.callback()), func(c *Config) { c.NoPasswordLogin = true })
	lb.start.Store(m)
	lb.rest.Store(m)

	b := newOIDCBrowser()
	if got := b.land(t, lb.srv.URL+"/api/auth/oidc/start"); got != "oidc" {
		t.Fatalf("sign-in through Hydra landed at #%s, want #oidc", got)
	}
	status, token, u := b.session(t, lb.srv.URL)
	if status != http.StatusCreated || token == "" || u.ID != chat.ExternalUserID(h.issuer, hydraSubject) || u.Name != hydraName {
		t.Fatalf("POST session = %d %q %+v, want 201, a token and the user %s named %s", status, token, u, chat.ExternalUserID(h.issuer, hydraSubject), hydraName)
	}
	c := &client{t: t, base: "http://" + m.Addr(), token: token}
	var room struct{ ID string }
	if st := c.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "oidc"}, &room); st != http.StatusCreated {
		t.Fatalf("create a room with the OIDC token: %d", st)
	}
	if st := c.do("POST", "/api/rooms/"+room.ID+"/messages", map[string]any{"body": "hello from hydra"}, nil); st != http.StatusCreated {
		t.Errorf("send with the OIDC token: %d", st)
	}

	// The callback again: its state cookie is spent.
	callback := b.callback
	if got := b.land(t, callback); !strings.HasPrefix(got, "oidc-error=") {
		t.Errorf("replayed callback landed at #%s, want #oidc-error=…", got)
	}
	// And with a copy of the state cookie: Hydra refuses a used code.
	thief := newOIDCBrowser()
	cb, _ := url.Parse(callback)
	thief.Jar.SetCookies(cb, []*http.Cookie{b.stateCookie})
	if got := thief.land(t, callback); !strings.HasPrefix(got, "oidc-error=") {
		t.Errorf("replayed callback with its state cookie landed at #%s, want #oidc-error=…", got)
	}
	if st, _, _ := thief.session(t, lb.srv.URL); st != http.StatusUnauthorized {
		t.Errorf("session after a replayed callback: %d, want 401", st)
	}

	// The user refuses at the provider.
	h.deny.Store(true)
	denied := newOIDCBrowser()
	if got := denied.land(t, lb.srv.URL+"/api/auth/oidc/start"); !strings.HasPrefix(got, "oidc-error=") || !strings.Contains(got, "access_denied") {
		t.Errorf("denied sign-in landed at #%s, want #oidc-error=… access_denied", got)
	}
	if st, _, _ := denied.session(t, lb.srv.URL); st != http.StatusUnauthorized {
		t.Errorf("session after a denied sign-in: %d, want 401", st)
	}
	for result, want := range map[string]float64{"ok": 1, "denied": 1, "no_state": 1, "provider": 1} {
		if got := labelled(t, m, "parley_oidc_logins_total", "result", result); got != want {
			t.Errorf("parley_oidc_logins_total{result=%q} = %v, want %v", result, got, want)
		}
	}
	// Passwords are off.
	if st := newClient(t, m.Addr()).do("POST", "/api/users", map[string]any{"name": "bob", "password": "longenough"}, nil); st != http.StatusForbidden {
		t.Errorf("sign-up with --password-login=false: %d, want 403", st)
	}
	// The account has no password: the token of its sign-in, minutes
	// old, deletes it (DELETE /api/me), and it is gone.
	if st := c.do("DELETE", "/api/me", map[string]any{}, nil); st != http.StatusNoContent {
		t.Errorf("DELETE /api/me with the token of a fresh OIDC sign-in: %d, want 204", st)
	}
	if st := c.do("GET", "/api/me", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("GET /api/me after the deletion: %d, want 401", st)
	}
}

// labelled reads one labelled series of a counter from m's /metrics.
func labelled(t *testing.T, m *Main, name, label, value string) float64 {
	t.Helper()
	return metric(t, m, fmt.Sprintf("%s{%s=%q}", name, label, value))
}

// TestOIDCHydraCluster: in cluster mode the sign-in starts on one node
// and the provider's redirect lands on another: the state is in the
// browser, signed by the key both derive from the client secret.
func TestOIDCHydraCluster(t *testing.T) {
	h := startHydra(t)
	env := needCluster(t)
	lb := newBalancer(t)
	h.createClient(t, lb.callback())
	a := startNode(t, env, "oidc-a", withHydra(h, lb.callback()))
	b := startNode(t, env, "oidc-b", withHydra(h, lb.callback()))
	lb.start.Store(a)
	lb.rest.Store(b)

	br := newOIDCBrowser()
	if got := br.land(t, lb.srv.URL+"/api/auth/oidc/start"); got != "oidc" {
		t.Fatalf("start at A, callback at B landed at #%s, want #oidc", got)
	}
	status, token, u := br.session(t, lb.srv.URL)
	if status != http.StatusCreated || u.Name != hydraName {
		t.Fatalf("POST session at B = %d %+v, want 201 for %s", status, u, hydraName)
	}
	var me user
	if st := (&client{t: t, base: "http://" + a.Addr(), token: token}).do("GET", "/api/me", nil, &me); st != http.StatusOK || me.ID != u.ID {
		t.Errorf("GET /api/me at A with B's token: %d %+v", st, me)
	}
	if got := labelled(t, b, "parley_oidc_logins_total", "result", "ok"); got != 1 {
		t.Errorf("B's parley_oidc_logins_total{result=\"ok\"} = %v, want 1", got)
	}
	// The token made by the sign-in at B deletes the account at A (its
	// sign-in time is the token's, in PostgreSQL), and B refuses it.
	if st := (&client{t: t, base: "http://" + a.Addr(), token: token}).do("DELETE", "/api/me", map[string]any{}, nil); st != http.StatusNoContent {
		t.Errorf("DELETE /api/me at A with the fresh OIDC token: %d, want 204", st)
	}
	if st := (&client{t: t, base: "http://" + b.Addr(), token: token}).do("GET", "/api/me", nil, nil); st != http.StatusUnauthorized {
		t.Errorf("GET /api/me at B after the deletion: %d, want 401", st)
	}
}
