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
}
