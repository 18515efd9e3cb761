package parleytest

import (
	"context"
	"testing"
	"time"

	"parley"
)

// UserDeleter is the part of a store that deletes an account (design
// §3b, DELETE /api/me): sqlite.Store and postgres.Store implement it.
type UserDeleter interface {
	DeleteUser(ctx context.Context, u parley.User, holdUntil time.Time) error
}

// RunDeleteUserTests checks DeleteUser on the stores newStore makes, which
// must implement UserDeleter: every token of the user stops working, the
// name no longer logs in, is refused to a new account until holdUntil and
// free after it, other users are untouched, and an unknown user is
// CodeNotFound.
func RunDeleteUserTests(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, nil)
	d, ok := s.(UserDeleter)
	if !ok {
		t.Fatalf("%T does not implement UserDeleter", s)
	}
	ctx := context.Background()
	alice, bob, carol := MustCreateUser(t, s, "alice"), MustCreateUser(t, s, "bob"), MustCreateUser(t, s, "carol")
	now := parley.Now()
	for i, u := range []parley.User{alice, alice, bob} {
		tok := parley.Token{Hash: []byte{byte(i), 'h'}, UserID: u.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}
		if err := s.CreateToken(ctx, tok); err != nil {
			t.Fatalf("CreateToken(%s) error = %v", u.Name, err)
		}
	}

	if err := d.DeleteUser(ctx, alice, now.Add(time.Hour)); err != nil {
		t.Fatalf("DeleteUser(alice) error = %v", err)
	}
	// A deleted account gets no token and no room, as an unknown one (a
	// login whose password was checked before the deletion, a direct room
	// opened with it); others still do.
	err := s.CreateToken(ctx, parley.Token{Hash: []byte("late"), UserID: alice.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)})
	wantCode(t, "CreateToken(alice after DeleteUser)", err, parley.CodeNotFound)
	_, _, err = s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindGroup, Title: "t", CreatorID: alice.ID})
	wantCode(t, "CreateRoom(group by alice after DeleteUser)", err, parley.CodeNotFound)
	_, _, err = s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: bob.ID, PeerID: alice.ID})
	wantCode(t, "CreateRoom(direct of bob with alice after DeleteUser)", err, parley.CodeNotFound)
	if err := s.CreateToken(ctx, parley.Token{Hash: []byte("bob's"), UserID: bob.ID, CreatedAt: now, ExpiresAt: now.Add(time.Hour)}); err != nil {
		t.Errorf("CreateToken(bob after alice's DeleteUser) = %v", err)
	}
	for i := range 2 {
		_, _, err := s.TokenUser(ctx, []byte{byte(i), 'h'}, now)
		wantCode(t, "TokenUser(alice's token after DeleteUser)", err, parley.CodeUnauthorized)
	}
	if u, _, err := s.TokenUser(ctx, []byte{2, 'h'}, now); err != nil || u.ID != bob.ID {
		t.Errorf("TokenUser(bob's token) = %+v, %v, want bob", u, err)
	}
	_, _, err = s.UserByName(ctx, "alice")
	wantCode(t, "UserByName(deleted alice)", err, parley.CodeNotFound)
	_, err = s.CreateUser(ctx, parley.NewUser{Name: "alice", PasswordHash: []byte("new")})
	wantCode(t, "CreateUser(alice while held)", err, parley.CodeNameTaken)
	if u, err := s.User(ctx, alice.ID); err != nil || u.Name == "alice" {
		t.Errorf("User(deleted alice) = %+v, %v, want the account under another name", u, err)
	}

	// A hold that is over frees the name.
	if err := d.DeleteUser(ctx, carol, now.Add(-time.Second)); err != nil {
		t.Fatalf("DeleteUser(carol) error = %v", err)
	}
	if u, err := s.CreateUser(ctx, parley.NewUser{Name: "carol", PasswordHash: []byte("new")}); err != nil || u.ID == carol.ID {
		t.Errorf("CreateUser(carol after her hold) = %+v, %v, want a new account", u, err)
	}
	if u, _, err := s.UserByName(ctx, "bob"); err != nil || u.ID != bob.ID {
		t.Errorf("UserByName(bob) = %+v, %v", u, err)
	}
	err = d.DeleteUser(ctx, parley.User{ID: "no-such-id", Name: "nobody"}, now.Add(time.Hour))
	wantCode(t, "DeleteUser(unknown)", err, parley.CodeNotFound)
}
