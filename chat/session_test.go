package chat_test

import (
	"bytes"
	"testing"
	"time"

	"parley"
	"parley/chat"
	"parley/parleytest"
)

// TestAuthenticateToken checks that AuthenticateToken names the owner and
// the stored token (one hash per token, the expiry the TTL gave it), and
// refuses what Authenticate refuses.
func TestAuthenticateToken(t *testing.T) {
	clock := parleytest.NewClock()
	svc := chat.New(chat.Config{Store: mustOpenStore(t), KDF: cheap, TokenTTL: time.Hour, Now: clock.Now})
	want, err := svc.Register(ctx, "carol", "longenough")
	if err != nil {
		t.Fatal(err)
	}
	before := clock.Now()
	first, _, err := svc.Login(ctx, "carol", "longenough")
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := svc.Login(ctx, "carol", "longenough")
	if err != nil {
		t.Fatal(err)
	}
	u, t1, err := svc.AuthenticateToken(ctx, first)
	if err != nil || u.ID != want.ID {
		t.Fatalf("AuthenticateToken(first) = %v, %v, want user %s", u, err, want.ID)
	}
	if t1.UserID != want.ID || len(t1.Hash) == 0 {
		t.Errorf("AuthenticateToken(first) token = %+v, want a hash and user %s", t1, want.ID)
	}
	if !t1.ExpiresAt.Equal(before.Add(time.Hour)) {
		t.Errorf("AuthenticateToken(first) expires at %v, want an hour after login (%v)", t1.ExpiresAt, before)
	}
	_, t2, err := svc.AuthenticateToken(ctx, second)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(t1.Hash, t2.Hash) {
		t.Errorf("two logins' tokens have the same hash %x", t1.Hash)
	}
	_, again, _ := svc.AuthenticateToken(ctx, first)
	if !bytes.Equal(again.Hash, t1.Hash) {
		t.Errorf("AuthenticateToken(first) hash = %x then %x, want the same", t1.Hash, again.Hash)
	}
	for _, bad := range []string{"", "pt_forged"} {
		if _, _, err := svc.AuthenticateToken(ctx, bad); parley.ErrorCode(err) != parley.CodeUnauthorized {
			t.Errorf("AuthenticateToken(%q) error = %v, want %s", bad, err, parley.CodeUnauthorized)
		}
	}
}
