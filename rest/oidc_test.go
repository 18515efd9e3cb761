package rest_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"parley/chat"
	"parley/oidcauth"
	"parley/oidcauth/oidctest"
	"parley/rest"
)

var oidcKey = []byte("a state key shared by the nodes!")

// oidcNode is a Parley node's REST API with OpenID Connect sign-in, its
// callback at redirect (the public URL, which may be another node's).
func oidcNode(t *testing.T, svc *chat.Service, op *oidctest.Provider, redirect string, noPasswords bool) *rest.Handler {
	t.Helper()
	rp, err := oidcauth.New(oidcauth.Config{
		Issuer: op.URL, ClientID: op.ClientID, ClientSecret: op.ClientSecret, RedirectURL: redirect, StateKey: oidcKey,
	})
	if err != nil {
		t.Fatal(err)
	}
	return rest.New(rest.Config{Chat: svc, NoPasswords: noPasswords, OIDC: &rest.OIDC{Provider: rp, Login: svc, Name: "Test OP"}})
}

// browser follows redirects with a cookie jar, and stops where the web
// client would take over (the home page).
func browser(t *testing.T) *http.Client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if req.URL.Path == "/" {
			return http.ErrUseLastResponse
		}
		return nil
	}}
}

// signIn goes from start to the home page and returns where it landed
// (its fragment: "oidc", or "oidc-error=…").
func signIn(t *testing.T, b *http.Client, start string) string {
	t.Helper()
	res, err := b.Get(start)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	loc, err := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || err != nil || loc.Path != "/" {
		t.Fatalf("sign-in ended with %d to %q, want 303 to the home page", res.StatusCode, res.Header.Get("Location"))
	}
	return loc.Fragment
}

// takeSession is the web client's POST /api/auth/oidc/session.
func takeSession(t *testing.T, b *http.Client, base string) (int, map[string]any) {
	t.Helper()
	res, err := b.Post(base+"/api/auth/oidc/session", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	var v map[string]any
	body, _ := io.ReadAll(res.Body)
	json.Unmarshal(body, &v)
	return res.StatusCode, v
}

func TestOIDCSignIn(t *testing.T) {
	op := oidctest.New()
	defer op.Close()
	svc, _ := openAccountStack(t)
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = oidcNode(t, svc, op, "http://"+srv.Listener.Addr().String()+"/api/auth/oidc/callback", false)
	srv.Start()
	defer srv.Close()

	b := browser(t)
	if got := signIn(t, b, srv.URL+"/api/auth/oidc/start"); got != "oidc" {
		t.Fatalf("landed at #%s, want #oidc", got)
	}
	status, v := takeSession(t, b, srv.URL)
	token, _ := v["token"].(string)
	if status != http.StatusCreated || token == "" {
		t.Fatalf("POST session = %d %v, want 201 with a token", status, v)
	}
	user, _ := v["user"].(map[string]any)
	if user["id"] != chat.ExternalUserID(op.URL, "alice-sub") || user["name"] != "alice" {
		t.Errorf("user = %v, want the identity's account named alice", user)
	}
	req, _ := http.NewRequest("GET", srv.URL+"/api/me", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	if res, err := http.DefaultClient.Do(req); err != nil || res.StatusCode != http.StatusOK {
		t.Errorf("GET /api/me with the token: %v %v, want 200", res.StatusCode, err)
	}
	// The token cookie is spent: taken once.
	if status, v := takeSession(t, b, srv.URL); status != http.StatusUnauthorized {
		t.Errorf("POST session again = %d %v, want 401", status, v)
	}
	// Another browser (no sign-in of its own) gets nothing.
	if status, _ := takeSession(t, browser(t), srv.URL); status != http.StatusUnauthorized {
		t.Errorf("POST session from another browser = %d, want 401", status)
	}

	// Refusals land home with the reason, and make no token cookie.
	op.Deny("access_denied")
	if got := signIn(t, b, srv.URL+"/api/auth/oidc/start"); !strings.HasPrefix(got, "oidc-error=") || !strings.Contains(got, "access_denied") {
		t.Errorf("denied sign-in landed at #%s, want #oidc-error=… access_denied", got)
	}
	op.Deny("")
	op.Forge("another-client", "", "")
	if got := signIn(t, b, srv.URL+"/api/auth/oidc/start"); !strings.HasPrefix(got, "oidc-error=") {
		t.Errorf("sign-in with a wrong aud landed at #%s, want #oidc-error=…", got)
	}
	op.Forge("", "", "")
	if status, _ := takeSession(t, b, srv.URL); status != http.StatusUnauthorized {
		t.Errorf("POST session after refusals = %d, want 401", status)
	}
	// A callback without the browser's state (a link from someone else).
	if got := signIn(t, browser(t), srv.URL+"/api/auth/oidc/callback?code=x&state=y"); !strings.HasPrefix(got, "oidc-error=") {
		t.Errorf("callback with no state cookie landed at #%s, want #oidc-error=…", got)
	}
}

// TestOIDCOtherNode: the callback lands on another node than the start
// (cluster mode behind a load balancer): the nodes share only the state
// key and the store.
func TestOIDCOtherNode(t *testing.T) {
	op := oidctest.New()
	defer op.Close()
	svc, _ := openAccountStack(t)
	nodeB := httptest.NewUnstartedServer(nil)
	callback := "http://" + nodeB.Listener.Addr().String() + "/api/auth/oidc/callback"
	nodeB.Config.Handler = oidcNode(t, svc, op, callback, false)
	nodeB.Start()
	defer nodeB.Close()
	nodeA := httptest.NewServer(oidcNode(t, svc, op, callback, false))
	defer nodeA.Close()

	b := browser(t)
	if got := signIn(t, b, nodeA.URL+"/api/auth/oidc/start"); got != "oidc" {
		t.Fatalf("start at A, callback at B landed at #%s, want #oidc", got)
	}
	if status, v := takeSession(t, b, nodeA.URL); status != http.StatusCreated {
		t.Errorf("POST session at A = %d %v, want 201", status, v)
	}
}

func TestPasswordsOff(t *testing.T) {
	op := oidctest.New()
	defer op.Close()
	svc, _ := openAccountStack(t)
	srv := httptest.NewServer(oidcNode(t, svc, op, "http://127.0.0.1/api/auth/oidc/callback", true))
	defer srv.Close()
	for _, path := range []string{"/api/users", "/api/tokens"} {
		res, err := http.Post(srv.URL+path, "application/json", strings.NewReader(`{"name":"bob","password":"longenough"}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(res.Body)
		res.Body.Close()
		if res.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "password sign-in is turned off") || !strings.Contains(string(body), "Test OP") {
			t.Errorf("POST %s = %d %s, want 403 saying passwords are off", path, res.StatusCode, body)
		}
	}
	res, err := http.Get(srv.URL + "/api/config")
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		PasswordLogin *bool `json:"password_login"`
		OIDC          *struct{ Name, Start string }
	}
	json.NewDecoder(res.Body).Decode(&cfg)
	res.Body.Close()
	if cfg.PasswordLogin == nil || *cfg.PasswordLogin || cfg.OIDC == nil || cfg.OIDC.Name != "Test OP" || cfg.OIDC.Start != "/api/auth/oidc/start" {
		t.Errorf("GET /api/config = %+v, want password_login false and the OP", cfg)
	}
}

func TestOIDCOff(t *testing.T) {
	_, h := openAccountStack(t)
	srv := httptest.NewServer(h)
	defer srv.Close()
	for _, path := range []string{"/api/auth/oidc/start", "/api/auth/oidc/callback?code=x&state=y"} {
		res, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s without OIDC = %d, want 404", path, res.StatusCode)
		}
	}
}
