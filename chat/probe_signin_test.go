package chat_test

import (
	"strings"
	"testing"
	"time"

	"parley"
	"parley/chat"
	"parley/jwtauth"
	"parley/sqlite"
)

// TestDeleteAccountSignedInClock: only a sign-in within the window before
// now deletes an account with no password. A JWT whose auth_time is
// ahead of the server's clock by more than the leeway (an identity
// provider's skewed clock, or a forged claim) does not show a recent
// sign-in, however far ahead; nor
// does one without auth_time or iat, nor an old one. Each refusal is
// forbidden and leaves the account as it was.
func TestDeleteAccountSignedInClock(t *testing.T) {
	now := time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)
	store := mustOpenStore(t)
	ids := map[string]jwtauth.Identity{
		jwtOf(1): {Issuer: "https://a.test", Subject: "s1", Name: "ada", ExpiresAt: exp, SignedInAt: now.Add(time.Hour)},
		jwtOf(2): {Issuer: "https://a.test", Subject: "s1", Name: "ada", ExpiresAt: exp, SignedInAt: now.Add(365 * 24 * time.Hour)},
		jwtOf(3): {Issuer: "https://a.test", Subject: "s1", Name: "ada", ExpiresAt: exp},
		jwtOf(4): {Issuer: "https://a.test", Subject: "s1", Name: "ada", ExpiresAt: exp, SignedInAt: now.Add(-chat.DefaultSignInWindow - time.Second)},
		jwtOf(5): {Issuer: "https://a.test", Subject: "s1", Name: "ada", ExpiresAt: exp, SignedInAt: now.Add(-time.Minute)},
	}
	svc := chat.New(chat.Config{Store: store, KDF: cheap, JWT: &fakeJWT{ids: ids}, Accounts: store.(*sqlite.Store), Now: func() time.Time { return now }})
	u, err := svc.Authenticate(ctx, jwtOf(5))
	if err != nil {
		t.Fatalf("Authenticate: %v", err)
	}
	for n, what := range map[int]string{1: "an auth_time an hour ahead", 2: "an auth_time a year ahead", 3: "no auth_time or iat", 4: "a sign-in older than the window"} {
		err := svc.DeleteAccountSignedIn(ctx, u, jwtOf(n))
		if parley.ErrorCode(err) != parley.CodeForbidden {
			t.Errorf("DeleteAccountSignedIn with %s: %v, want forbidden", what, err)
		}
		if got, err := svc.Authenticate(ctx, jwtOf(5)); err != nil || got.ID != u.ID {
			t.Fatalf("after the refusal with %s, Authenticate = %+v, %v; want the account still there", what, got, err)
		}
	}
	// A JWT that does not say when its sign-in was is told so, not that
	// its sign-in is old.
	if err := svc.DeleteAccountSignedIn(ctx, u, jwtOf(3)); err == nil || !strings.Contains(err.Error(), "auth_time") {
		t.Errorf("DeleteAccountSignedIn with no auth_time or iat: %v, want an error that names auth_time", err)
	}
	if err := svc.DeleteAccountSignedIn(ctx, u, jwtOf(5)); err != nil {
		t.Fatalf("DeleteAccountSignedIn with a sign-in a minute old: %v", err)
	}
}

// TestDeleteAccountSignedInLeeway: a sign-in dated ahead of the server's
// clock by at most Config.SignInLeeway (the JWT checks' --jwt-leeway,
// default jwtauth.DefaultLeeway) counts as made now and deletes the
// account; one ahead by more is the 403 that names the clock, and
// changes nothing. The default and a set leeway alike.
func TestDeleteAccountSignedInLeeway(t *testing.T) {
	now := time.Date(2027, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, leeway := range []time.Duration{0, 2 * time.Minute} {
		allowed := leeway
		if allowed == 0 {
			allowed = jwtauth.DefaultLeeway
		}
		t.Run(allowed.String(), func(t *testing.T) {
			store := mustOpenStore(t)
			ids := map[string]jwtauth.Identity{
				jwtOf(1): {Issuer: "https://a.test", Subject: "s1", Name: "ada", ExpiresAt: exp, SignedInAt: now.Add(allowed + time.Second)},
				jwtOf(2): {Issuer: "https://a.test", Subject: "s1", Name: "ada", ExpiresAt: exp, SignedInAt: now.Add(allowed)},
			}
			svc := chat.New(chat.Config{Store: store, KDF: cheap, JWT: &fakeJWT{ids: ids}, Accounts: store.(*sqlite.Store),
				SignInLeeway: leeway, Now: func() time.Time { return now }})
			u, err := svc.Authenticate(ctx, jwtOf(2))
			if err != nil {
				t.Fatalf("Authenticate: %v", err)
			}
			err = svc.DeleteAccountSignedIn(ctx, u, jwtOf(1))
			if parley.ErrorCode(err) != parley.CodeForbidden || !strings.Contains(err.Error(), "ahead of this server's clock") {
				t.Errorf("DeleteAccountSignedIn with a sign-in %v ahead: %v, want forbidden naming the clock", allowed+time.Second, err)
			}
			if got, err := svc.Authenticate(ctx, jwtOf(2)); err != nil || got.ID != u.ID {
				t.Fatalf("after the refusal, Authenticate = %+v, %v; want the account still there", got, err)
			}
			if err := svc.DeleteAccountSignedIn(ctx, u, jwtOf(2)); err != nil {
				t.Fatalf("DeleteAccountSignedIn with a sign-in %v ahead (within the leeway): %v", allowed, err)
			}
		})
	}
}
