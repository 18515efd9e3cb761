package rest_test

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"parley/oidcauth"
	"parley/oidcauth/oidctest"
	"parley/ratelimit"
	"parley/rest"
)

// Probe: an OpenID Connect sign-in makes a new account on an identity's
// first sight, but the sign-up limit per address (--signup-rate, design
// §5a "sign-ups per address") is only taken by POST /api/users. With a
// provider where anyone can register (Keycloak or Dex with self-service
// sign-up, a social login), and all the more with --password-login=false
// where OIDC is the only way in, one address makes as many Parley
// accounts as it has identities, unlimited. A first-sight sign-in should
// take the address's sign-up budget as a sign-up does.
func TestProbeOIDCSignupLimit(t *testing.T) {
	op := oidctest.New()
	defer op.Close()
	svc, _ := openAccountStack(t)
	srv := httptest.NewUnstartedServer(nil)
	redirect := "http://" + srv.Listener.Addr().String() + "/api/auth/oidc/callback"
	rp, err := oidcauth.New(oidcauth.Config{Issuer: op.URL, ClientID: op.ClientID, ClientSecret: op.ClientSecret, RedirectURL: redirect, StateKey: oidcKey})
	if err != nil {
		t.Fatal(err)
	}
	srv.Config.Handler = rest.New(rest.Config{Chat: svc, NoPasswords: true,
		SignupLimit: ratelimit.New(ratelimit.Config{Rate: 0.001, Burst: 2}),
		OIDC:        &rest.OIDC{Provider: rp, Login: svc, Name: "Test OP"}})
	srv.Start()
	defer srv.Close()

	made := 0
	for i := range 6 {
		op.SetUser(fmt.Sprint("sub-", i), fmt.Sprint("user", i))
		b := browser(t)
		if got := signIn(t, b, srv.URL+"/api/auth/oidc/start"); got != "oidc" {
			if !strings.Contains(got, "oidc-error=") {
				t.Fatalf("landed at #%s", got)
			}
			continue
		}
		if status, _ := takeSession(t, b, srv.URL); status == 201 {
			made++
		}
	}
	if made > 2 {
		t.Errorf("one address made %d new accounts through OpenID Connect; the sign-up limit allows 2", made)
	}
}
