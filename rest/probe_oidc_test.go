package rest_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"parley/oidcauth/oidctest"
)

// Probe: GET /api/auth/oidc/callback with ?error= is taken as the
// provider's refusal before the state is checked (oidcauth.Finish looks at
// "error" first), and the callback spends the browser's state cookie
// whatever the outcome. So anyone can make a victim's browser open
// /api/auth/oidc/callback?error=access_denied&error_description=… (a
// link, a redirect from any site: a top-level GET carries the Lax cookie)
// and it cancels the sign-in the victim has in progress, whose real
// callback then fails with no_state (a login-flow CSRF: a sign-in can be
// broken on demand, e.g. to push a user toward a look-alike page). An
// error response names the sign-in's state as a code does (RFC 6749
// §4.1.2.1); a callback whose state is not the browser's should change
// nothing. (The text shown, "the identity provider refused the sign-in:
// <attacker's text>", is no worse than a link to /#oidc-error=…, which
// the web client shows as it is.)
func TestProbeOIDCForgedErrorCallback(t *testing.T) {
	op := oidctest.New()
	defer op.Close()
	svc, _ := openAccountStack(t)
	srv := httptest.NewUnstartedServer(nil)
	srv.Config.Handler = oidcNode(t, svc, op, "http://"+srv.Listener.Addr().String()+"/api/auth/oidc/callback", false)
	srv.Start()
	defer srv.Close()

	b := browser(t)
	// The victim presses the button: the state cookie is set, the browser
	// is on its way to the provider.
	stop := *b
	stop.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := stop.Get(srv.URL + "/api/auth/oidc/start")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	authURL := res.Header.Get("Location")
	if res.StatusCode != http.StatusFound || authURL == "" {
		t.Fatalf("start = %d to %q", res.StatusCode, authURL)
	}
	// Meanwhile a page of the attacker's sends the browser to a forged
	// error callback, with no state (or any state).
	if got := signIn(t, b, srv.URL+"/api/auth/oidc/callback?error=access_denied&state=forged"); !strings.HasPrefix(got, "oidc-error=") {
		t.Fatalf("forged error callback landed at #%s", got)
	}
	// The victim's real sign-in comes back from the provider.
	if got := signIn(t, b, authURL); got != "oidc" {
		t.Errorf("the victim's own sign-in landed at #%s after a forged error callback, want #oidc: the forged link spent its state", got)
	}
}
