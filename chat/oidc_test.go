package chat_test

import (
	"testing"
	"time"

	"parley"
	"parley/chat"
	"parley/jwtauth"
	"parley/sqlite"
)

// TestLoginExternal: an OpenID Connect sign-in makes the same account as
// a JWT of the same (issuer, subject), and its token signs in like a
// password's; a deleted account's identity gets no token.
func TestLoginExternal(t *testing.T) {
	store := mustOpenStore(t)
	v := &fakeJWT{ids: map[string]jwtauth.Identity{jwtOf(1): {Issuer: "https://a.test", Subject: "s1", Name: "ada", ExpiresAt: exp}}}
	svc := chat.New(chat.Config{Store: store, KDF: cheap, JWT: v, Accounts: store.(*sqlite.Store)})
	token, u, err := svc.LoginExternal(ctx, "https://a.test", "s1", "Ada", nil)
	if err != nil {
		t.Fatalf("LoginExternal: %v", err)
	}
	if u.ID != chat.ExternalUserID("https://a.test", "s1") || u.Name != "Ada" {
		t.Errorf("LoginExternal = %+v, want id %s named Ada", u, chat.ExternalUserID("https://a.test", "s1"))
	}
	if got, err := svc.Authenticate(ctx, token); err != nil || got.ID != u.ID {
		t.Errorf("Authenticate(its token) = %+v, %v; want %s", got, err, u.ID)
	}
	if got, err := svc.Authenticate(ctx, jwtOf(1)); err != nil || got.ID != u.ID {
		t.Errorf("Authenticate(a JWT of the same identity) = %+v, %v; want the same user %s", got, err, u.ID)
	}
	if _, _, err := svc.Login(ctx, "Ada", "anything-at-all"); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("password Login of the OIDC account: %v, want unauthorized", err)
	}
	// An outside identity's account has no password for DELETE /api/me
	// (DeleteAccountSignedIn takes a recent sign-in's token in its
	// place): here it is deleted as an operator would.
	if err := store.(*sqlite.Store).DeleteUser(ctx, u, time.Now()); err != nil {
		t.Fatalf("DeleteUser: %v", err)
	}
	if _, _, err := svc.LoginExternal(ctx, "https://a.test", "s1", "Ada", nil); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("LoginExternal of a deleted account: %v, want unauthorized", err)
	}
}
