package chat_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"parley"
	"parley/chat"
	"parley/parleytest"
	"parley/sqlite"
)

var ctx = context.Background()

// cheap and other are two argon2id costs small enough for tests.
var (
	cheap = chat.KDF{Time: 1, Memory: 64, Threads: 1}
	other = chat.KDF{Time: 2, Memory: 128, Threads: 1}
)

func mustOpenStore(t *testing.T) parley.Store {
	t.Helper()
	s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "parley.db"), Sync: sqlite.SyncOff})
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestLoginAfterCostChange checks that an account keeps working when the
// configured password cost changes: each hash carries its own cost.
func TestLoginAfterCostChange(t *testing.T) {
	store := mustOpenStore(t)
	before := chat.New(chat.Config{Store: store, KDF: cheap})
	u, err := before.Register(ctx, "alice", "correct horse")
	if err != nil {
		t.Fatalf("Register() error = %v", err)
	}
	after := chat.New(chat.Config{Store: store, KDF: other})
	token, got, err := after.Login(ctx, "alice", "correct horse")
	if err != nil || got != u || token == "" {
		t.Fatalf("Login() after a cost change = %q, %+v, %v; want a token for %+v", token, got, err, u)
	}
	if _, _, err := after.Login(ctx, "alice", "wrong horse"); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("Login(wrong password) error = %v, want %s", err, parley.CodeUnauthorized)
	}
	if _, _, err := after.Login(ctx, "nobody", "correct horse"); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("Login(unknown user) error = %v, want %s", err, parley.CodeUnauthorized)
	}
	if who, err := after.Authenticate(ctx, token); err != nil || who != u {
		t.Errorf("Authenticate() = %+v, %v; want %+v", who, err, u)
	}
}

// TestTokenExpiry checks that a token is accepted until its TTL has
// passed on the service's clock, and refused from then on.
func TestTokenExpiry(t *testing.T) {
	clock := parleytest.NewClock()
	svc := chat.New(chat.Config{Store: mustOpenStore(t), KDF: cheap, TokenTTL: time.Hour, Now: clock.Now})
	if _, err := svc.Register(ctx, "bob_1", "longenough"); err != nil {
		t.Fatal(err)
	}
	token, _, err := svc.Login(ctx, "bob_1", "longenough")
	if err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour - time.Microsecond)
	if _, err := svc.Authenticate(ctx, token); err != nil {
		t.Errorf("Authenticate(a microsecond before expiry) error = %v, want none", err)
	}
	clock.Advance(time.Microsecond)
	if _, err := svc.Authenticate(ctx, token); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("Authenticate(expired) error = %v, want %s", err, parley.CodeUnauthorized)
	}
	for _, bad := range []string{"", "pt_forged", "not even a token"} {
		if _, err := svc.Authenticate(ctx, bad); parley.ErrorCode(err) != parley.CodeUnauthorized {
			t.Errorf("Authenticate(%q) error = %v, want %s", bad, err, parley.CodeUnauthorized)
		}
	}
}

// TestValidation checks the input rules of the service, whatever the
// transport.
func TestValidation(t *testing.T) {
	svc := chat.New(chat.Config{Store: mustOpenStore(t), KDF: cheap, MaxBody: 8})
	tests := []struct {
		name string
		err  error
		code string
	}{
		{"name too short", second(svc.Register(ctx, "ab", "longenough")), parley.CodeInvalid},
		{"name too long", second(svc.Register(ctx, "abcdefghijabcdefghijabcdefghijabc", "longenough")), parley.CodeInvalid},
		{"name with slash", second(svc.Register(ctx, "a/b", "longenough")), parley.CodeInvalid},
		{"password too short", second(svc.Register(ctx, "carol", "1234567")), parley.CodeInvalid},
		{"empty body", svc.CheckBody(""), parley.CodeInvalid},
		{"body over the limit", svc.CheckBody("123456789"), parley.CodeTooLarge},
		{"body invalid UTF-8", svc.CheckBody("\xff"), parley.CodeInvalid},
		{"body at the limit", svc.CheckBody("12345678"), ""},
	}
	for _, tt := range tests {
		if got := parley.ErrorCode(tt.err); got != tt.code {
			t.Errorf("%s: error = %v, want code %q", tt.name, tt.err, tt.code)
		}
	}
}

func second[T any](_ T, err error) error { return err }
