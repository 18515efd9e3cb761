package parleytest

import (
	"bytes"
	"context"
	"testing"
	"time"

	"parley"
)

// testAccounts: users by name and id, tokens and their expiry.
func testAccounts(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, nil)
	ctx := context.Background()
	hash := []byte("kdf output")
	alice, err := s.CreateUser(ctx, parley.NewUser{Name: "alice", PasswordHash: hash})
	if err != nil || alice.ID == "" || alice.Name != "alice" {
		t.Fatalf("CreateUser(alice) = %+v, %v", alice, err)
	}
	_, err = s.CreateUser(ctx, parley.NewUser{Name: "alice", PasswordHash: hash})
	wantCode(t, "CreateUser(alice again)", err, parley.CodeNameTaken)

	u, h, err := s.UserByName(ctx, "alice")
	if err != nil || u.ID != alice.ID || u.Name != "alice" || !bytes.Equal(h, hash) {
		t.Errorf("UserByName(alice) = %+v, %q, %v, want %+v, %q", u, h, err, alice, hash)
	}
	_, _, err = s.UserByName(ctx, "nobody")
	wantCode(t, "UserByName(nobody)", err, parley.CodeNotFound)
	if u, err := s.User(ctx, alice.ID); err != nil || u.ID != alice.ID || u.Name != "alice" {
		t.Errorf("User(alice) = %+v, %v", u, err)
	}
	_, err = s.User(ctx, "no-such-id")
	wantCode(t, "User(unknown)", err, parley.CodeNotFound)

	now := parley.Now()
	tok := parley.Token{Hash: []byte("token hash"), UserID: alice.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
	if err := s.CreateToken(ctx, tok); err != nil {
		t.Fatalf("CreateToken() error = %v", err)
	}
	u, got, err := s.TokenUser(ctx, tok.Hash, now.Add(time.Minute))
	if err != nil || u.ID != alice.ID || u.Name != "alice" || got.UserID != alice.ID || !got.ExpiresAt.Equal(tok.ExpiresAt) {
		t.Errorf("TokenUser() = %+v, %+v, %v, want alice and the token", u, got, err)
	}
	_, _, err = s.TokenUser(ctx, tok.Hash, now.Add(2*time.Hour))
	wantCode(t, "TokenUser(expired)", err, parley.CodeUnauthorized)
	_, _, err = s.TokenUser(ctx, []byte("unknown"), now)
	wantCode(t, "TokenUser(unknown)", err, parley.CodeUnauthorized)

	t.Run("Revocation", func(t *testing.T) { testRevocation(t, newStore) })
}

// testRevocation: a revoked token is refused from the moment RevokeToken
// returns, even one a caching store has just served; revoking all of a
// user's tokens leaves other users' tokens working; revoking what is not
// there changes nothing; a token made after a revocation works.
func testRevocation(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, nil)
	ctx := context.Background()
	alice := MustCreateUser(t, s, "alice")
	bob := MustCreateUser(t, s, "bob")
	now := parley.Now()
	owner := map[string]string{}
	for _, tc := range []struct{ hash, user string }{
		{"alice 1", alice.ID}, {"alice 2", alice.ID}, {"alice 3", alice.ID}, {"bob 1", bob.ID}, {"alice 4", alice.ID},
	} {
		owner[tc.hash] = tc.user
	}
	create := func(hash string) {
		t.Helper()
		err := s.CreateToken(ctx, parley.Token{Hash: []byte(hash), UserID: owner[hash], CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
		if err != nil {
			t.Fatalf("CreateToken(%q) error = %v", hash, err)
		}
	}
	for _, h := range []string{"alice 1", "alice 2", "alice 3", "bob 1"} {
		create(h)
	}
	steps := []struct {
		name   string
		do     func() error
		create string   // a token to make after do
		valid  []string // the tokens that work after the step
		gone   []string // the tokens refused after it
	}{
		{"all served", nil, "", []string{"alice 1", "alice 2", "alice 3", "bob 1"}, nil},
		{"revoke one", func() error { return s.RevokeToken(ctx, []byte("alice 1")) }, "",
			[]string{"alice 2", "alice 3", "bob 1"}, []string{"alice 1"}},
		{"revoke it again", func() error { return s.RevokeToken(ctx, []byte("alice 1")) }, "",
			[]string{"alice 2", "alice 3", "bob 1"}, []string{"alice 1"}},
		{"revoke an unknown hash", func() error { return s.RevokeToken(ctx, []byte("nobody's")) }, "",
			[]string{"alice 2", "alice 3", "bob 1"}, []string{"alice 1"}},
		{"revoke all of alice's", func() error { return s.RevokeUserTokens(ctx, alice.ID) }, "",
			[]string{"bob 1"}, []string{"alice 1", "alice 2", "alice 3"}},
		{"revoke all of alice's again", func() error { return s.RevokeUserTokens(ctx, alice.ID) }, "",
			[]string{"bob 1"}, []string{"alice 1", "alice 2", "alice 3"}},
		{"log in again", nil, "alice 4",
			[]string{"bob 1", "alice 4"}, []string{"alice 1", "alice 2", "alice 3"}},
		{"revoke all of an unknown user's", func() error { return s.RevokeUserTokens(ctx, "no-such-id") }, "",
			[]string{"bob 1", "alice 4"}, []string{"alice 1", "alice 2", "alice 3"}},
	}
	for _, st := range steps {
		if st.do != nil {
			if err := st.do(); err != nil {
				t.Fatalf("%s: error = %v", st.name, err)
			}
		}
		if st.create != "" {
			create(st.create)
		}
		for _, h := range st.valid {
			u, tok, err := s.TokenUser(ctx, []byte(h), now.Add(time.Minute))
			if err != nil || u.ID != owner[h] || tok.UserID != owner[h] {
				t.Errorf("%s: TokenUser(%q) = %+v, %+v, %v, want its owner %s", st.name, h, u, tok, err, owner[h])
			}
		}
		for _, h := range st.gone {
			_, _, err := s.TokenUser(ctx, []byte(h), now.Add(time.Minute))
			wantCode(t, st.name+": TokenUser("+h+")", err, parley.CodeUnauthorized)
		}
	}
}
