package chat_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/chat"
	"parley/jwtauth"
	"parley/sqlite"
)

// fakeJWT verifies the tokens of its table and counts its calls.
type fakeJWT struct {
	ids   map[string]jwtauth.Identity
	calls atomic.Int64
}

func (f *fakeJWT) Verify(_ context.Context, token string) (jwtauth.Identity, error) {
	f.calls.Add(1)
	id, ok := f.ids[token]
	if !ok {
		return jwtauth.Identity{}, &jwtauth.Error{Reason: "signature", Msg: "the signature does not verify"}
	}
	return id, nil
}

var exp = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

// jwtOf makes a token of JWT shape for identity n.
func jwtOf(n int) string { return fmt.Sprintf("aGVhZGVy.c3ViLSVk%d.c2ln", n) }

func TestJWTSignIn(t *testing.T) {
	store := mustOpenStore(t)
	v := &fakeJWT{ids: map[string]jwtauth.Identity{
		jwtOf(1): {Issuer: "https://a.test", Subject: "s1", Name: "ada", ExpiresAt: exp},
		jwtOf(2): {Issuer: "https://b.test", Subject: "s1", Name: "ada", ExpiresAt: exp},   // another issuer, same sub
		jwtOf(3): {Issuer: "https://a.test", Subject: "s3", Name: "alice", ExpiresAt: exp}, // a Parley user's name
		jwtOf(4): {Issuer: "https://a.test", Subject: "s4", Name: "Ada Lovelace", ExpiresAt: exp},
		jwtOf(5): {Issuer: "https://a.test", Subject: "s5", Name: "", ExpiresAt: exp},
		jwtOf(6): {Issuer: "https://a.test", Subject: "s6", Name: "alice", ExpiresAt: exp},
	}}
	svc := chat.New(chat.Config{Store: store, KDF: cheap, JWT: v, Accounts: store.(*sqlite.Store)})
	if _, err := svc.Register(ctx, "alice", "longenough"); err != nil {
		t.Fatal(err)
	}
	id := func(iss, sub string) string { return chat.ExternalUserID(iss, sub) }
	for _, tc := range []struct {
		token    string
		wantID   string
		wantName string
	}{
		{jwtOf(1), id("https://a.test", "s1"), "ada"},
		{jwtOf(1), id("https://a.test", "s1"), "ada"}, // again: the same account
		{jwtOf(2), id("https://b.test", "s1"), "ada-" + id("https://b.test", "s1")[1:9]},
		{jwtOf(3), id("https://a.test", "s3"), "alice-" + id("https://a.test", "s3")[1:9]},
		{jwtOf(4), id("https://a.test", "s4"), "Ada_Lovelace"},
		{jwtOf(5), id("https://a.test", "s5"), "user-" + id("https://a.test", "s5")[1:]},
		{jwtOf(6), id("https://a.test", "s6"), "alice-" + id("https://a.test", "s6")[1:9]},
	} {
		u, tok, err := svc.AuthenticateToken(ctx, tc.token)
		if err != nil || u.ID != tc.wantID || u.Name != tc.wantName {
			t.Errorf("AuthenticateToken(%s) = %+v, %v; want %s %q", tc.token, u, err, tc.wantID, tc.wantName)
		}
		h := sha256.Sum256([]byte(tc.token))
		if !bytes.Equal(tok.Hash, h[:]) || !tok.ExpiresAt.Equal(exp) || tok.UserID != u.ID {
			t.Errorf("AuthenticateToken(%s) token = %+v; want the JWT's hash and exp %v", tc.token, tok, exp)
		}
		if u2, err := svc.Authenticate(ctx, tc.token); err != nil || u2 != u {
			t.Errorf("Authenticate(%s) = %+v, %v; want %+v", tc.token, u2, err, u)
		}
	}
	if id("https://a.test", "s1") == id("https://b.test", "s1") || id("a", "bc") == id("ab", "c") {
		t.Errorf("ExternalUserID gives two identities one id")
	}

	// A JWT that does not verify, and Parley's own tokens, which never
	// reach the verifier.
	if _, err := svc.Authenticate(ctx, jwtOf(99)); parley.ErrorCode(err) != parley.CodeUnauthorized || !strings.Contains(err.Error(), "signature") {
		t.Errorf("Authenticate(a forged JWT) = %v, want unauthorized naming the signature", err)
	}
	calls := v.calls.Load()
	token, _, err := svc.Login(ctx, "alice", "longenough")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, token); err != nil {
		t.Errorf("Authenticate(a Parley token) = %v", err)
	}
	if _, err := svc.Authenticate(ctx, "pt_unknown"); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("Authenticate(an unknown Parley token) = %v, want unauthorized", err)
	}
	if got := v.calls.Load(); got != calls {
		t.Errorf("the verifier was called %d times for Parley tokens, want 0", got-calls)
	}

	// A JWT user has no password, and its JWT cannot be revoked here.
	ada, _ := svc.Authenticate(ctx, jwtOf(1))
	if _, _, err := svc.Login(ctx, "ada", ""); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("Login(ada, no password) = %v, want unauthorized", err)
	}
	if err := svc.Logout(ctx, jwtOf(1)); parley.ErrorCode(err) != parley.CodeInvalid {
		t.Errorf("Logout(JWT) = %v, want invalid", err)
	}
	if err := svc.VerifyPassword(ctx, ada, ""); parley.ErrorCode(err) != parley.CodeForbidden || !strings.Contains(err.Error(), "JWT") {
		t.Errorf("VerifyPassword(JWT user) = %v, want forbidden naming the JWT", err)
	}
	if err := svc.DeleteAccount(ctx, ada, "anything"); parley.ErrorCode(err) != parley.CodeForbidden {
		t.Errorf("DeleteAccount(JWT user) = %v, want forbidden", err)
	}
	if _, err := svc.Authenticate(ctx, jwtOf(1)); err != nil {
		t.Errorf("Authenticate(JWT) after the refused deletion = %v", err)
	}

	// An account deleted (the store's DeleteUser, as an operator would) stays
	// deleted for its identity.
	if err := store.(*sqlite.Store).DeleteUser(ctx, ada, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Authenticate(ctx, jwtOf(1)); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("Authenticate(JWT of a deleted account) = %v, want unauthorized", err)
	}
}

// lookupBarrier holds each of the first n User lookups until all n have
// been made, so that n first sights all miss the account before any of
// them creates it (as on n nodes at once).
type lookupBarrier struct {
	parley.Store
	n       int
	mu      sync.Mutex // guards seen
	seen    int
	release chan struct{}
}

func (b *lookupBarrier) User(ctx context.Context, id string) (parley.User, error) {
	u, err := b.Store.User(ctx, id)
	b.mu.Lock()
	if b.seen++; b.seen == b.n {
		close(b.release)
	}
	b.mu.Unlock()
	<-b.release
	return u, err
}

// TestJWTProvisionRace: many first sights of one identity at once, all
// of which find no account, make one account, and each gets it.
func TestJWTProvisionRace(t *testing.T) {
	const n = 8
	v := &fakeJWT{ids: map[string]jwtauth.Identity{jwtOf(1): {Issuer: "https://a.test", Subject: "new", Name: "newcomer", ExpiresAt: exp}}}
	store := &lookupBarrier{Store: mustOpenStore(t), n: n, release: make(chan struct{})}
	svc := chat.New(chat.Config{Store: store, KDF: cheap, JWT: v})
	users := make([]parley.User, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { users[i], errs[i] = svc.Authenticate(ctx, jwtOf(1)) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || users[i] != users[0] || users[i].Name != "newcomer" {
			t.Errorf("sight %d = %+v, %v; want %+v", i, users[i], errs[i], users[0])
		}
	}
}

func TestExternalNames(t *testing.T) {
	id := chat.ExternalUserID("https://a.test", "s")
	for _, tc := range []struct {
		wanted string
		want   []string
	}{
		{"ada", []string{"ada", "ada-" + id[1:9], "user-" + id[1:]}},
		{"José María", []string{"Jos__Mar_a", "Jos__Mar_a-" + id[1:9], "user-" + id[1:]}},
		{"a-very-long-name-of-more-than-32-chars", []string{"a-very-long-name-of-more-than-32", "a-very-long-name-of-mor-" + id[1:9], "user-" + id[1:]}},
		{"李", []string{"user-" + id[1:]}},
		{"", []string{"user-" + id[1:]}},
		{"  ", []string{"user-" + id[1:]}},
	} {
		if got := chat.ExternalNames(id, tc.wanted); fmt.Sprint(got) != fmt.Sprint(tc.want) {
			t.Errorf("ExternalNames(%q) = %q, want %q", tc.wanted, got, tc.want)
		}
	}
	if !chat.IsExternalUser(id) || chat.IsExternalUser(parley.NewID()) {
		t.Errorf("IsExternalUser: an external id is %v, a Parley id is %v", chat.IsExternalUser(id), chat.IsExternalUser(parley.NewID()))
	}
}

// BenchmarkAuthenticateParleyToken: a Parley token's check with JWT
// sign-in off and on; on adds only the shape scan (LooksLikeJWT).
func BenchmarkAuthenticateParleyToken(b *testing.B) {
	for _, on := range []bool{false, true} {
		b.Run(fmt.Sprintf("jwt=%v", on), func(b *testing.B) {
			store, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(b.TempDir(), "parley.db"), Sync: sqlite.SyncOff})
			if err != nil {
				b.Fatal(err)
			}
			defer store.Close()
			cfg := chat.Config{Store: store, KDF: cheap}
			if on {
				cfg.JWT = &fakeJWT{}
			}
			svc := chat.New(cfg)
			if _, err := svc.Register(ctx, "alice", "longenough"); err != nil {
				b.Fatal(err)
			}
			token, _, err := svc.Login(ctx, "alice", "longenough")
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := svc.Authenticate(ctx, token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
