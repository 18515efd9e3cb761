package chat_test

import (
	"context"
	"testing"
	"time"

	"parley"
	"parley/chat"
	"parley/sqlite"
)

// tokenHook is a store whose CreateToken first runs before, as a
// deletion committing between a login's password check and its token
// would.
type tokenHook struct {
	parley.Store
	before func()
}

func (s tokenHook) CreateToken(ctx context.Context, t parley.Token) error {
	if s.before != nil {
		s.before()
	}
	return s.Store.CreateToken(ctx, t)
}

// deleteHook is an Accounts whose DeleteUser first runs before, as the
// requests of a session that raced the deletion would.
type deleteHook struct {
	*sqlite.Store
	before func()
}

func (a deleteHook) DeleteUser(ctx context.Context, u parley.User, holdUntil time.Time) error {
	if a.before != nil {
		a.before()
	}
	return a.Store.DeleteUser(ctx, u, holdUntil)
}

// TestLoginRacingDeletion: a login whose password was checked before the
// account's deletion committed, and whose token comes after it, gets no
// working token (issue 29's review: such tokens outlived DELETE /api/me).
func TestLoginRacingDeletion(t *testing.T) {
	store := mustOpenStore(t)
	db := store.(*sqlite.Store)
	hooked := &tokenHook{Store: store}
	svc := chat.New(chat.Config{Store: hooked, KDF: cheap, Accounts: db, NameHold: time.Hour})
	alice, err := svc.Register(ctx, "alice", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	hooked.before = func() {
		hooked.before = nil
		if err := db.DeleteUser(ctx, alice, time.Now().Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	tok, _, err := svc.Login(ctx, "alice", "correct horse")
	if parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("Login racing the deletion = %v, want unauthorized", err)
	}
	if tok != "" {
		if _, err := svc.Authenticate(ctx, tok); err == nil {
			t.Errorf("the token of a login that raced the deletion works")
		}
	}
}

// TestDeleteAccountRacingSession: what a session did while its account's
// deletion ran (a token from a login in flight, a room joined with it)
// does not outlive the deletion: the token is refused and the account is
// in no room.
func TestDeleteAccountRacingSession(t *testing.T) {
	store := mustOpenStore(t)
	db := store.(*sqlite.Store)
	accounts := &deleteHook{Store: db}
	svc := chat.New(chat.Config{Store: store, KDF: cheap, Accounts: accounts, NameHold: time.Hour})
	alice, _ := svc.Register(ctx, "alice", "correct horse")
	bob, _ := svc.Register(ctx, "bob", "correct horse")
	late, _, err := svc.CreateRoom(ctx, bob, chat.NewRoom{Kind: parley.KindGroup, Title: "joined late"})
	if err != nil {
		t.Fatal(err)
	}
	var raced string
	accounts.before = func() {
		tok, _, err := svc.Login(ctx, "alice", "correct horse")
		if err != nil {
			t.Fatalf("Login during the deletion: %v", err)
		}
		raced = tok
		u, err := svc.Authenticate(ctx, tok)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Join(ctx, u, late.ID); err != nil {
			t.Fatal(err)
		}
		if _, _, err := svc.Send(ctx, u, late.ID, "said while being deleted", ""); err != nil {
			t.Fatal(err)
		}
	}
	if err := svc.DeleteAccount(ctx, alice, "correct horse"); err != nil {
		t.Fatalf("DeleteAccount() = %v", err)
	}
	if _, err := svc.Authenticate(ctx, raced); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("Authenticate(token made during the deletion) = %v, want unauthorized", err)
	}
	if _, err := store.Member(ctx, late.ID, alice.ID); parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("Member(room joined during the deletion, alice) = %v, want not_found", err)
	}
	ms, err := store.Messages(ctx, late.ID, parley.Page{After: 0, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.SenderID == alice.ID && (!m.Deleted() || m.Body != "") {
			t.Errorf("message %d sent during the deletion: %q, deleted %v; want a tombstone", m.Seq, m.Body, m.Deleted())
		}
	}
}

// TestDirectRoomWithDeletedPeer: nobody can open a direct room with a
// deleted account, nor bring it back into the one they had.
func TestDirectRoomWithDeletedPeer(t *testing.T) {
	store := mustOpenStore(t)
	svc := chat.New(chat.Config{Store: store, KDF: cheap, Accounts: store.(*sqlite.Store), NameHold: time.Hour})
	alice, _ := svc.Register(ctx, "alice", "correct horse")
	bob, _ := svc.Register(ctx, "bob", "correct horse")
	carol, _ := svc.Register(ctx, "carol", "correct horse")
	direct, _, err := svc.CreateRoom(ctx, bob, chat.NewRoom{Kind: parley.KindDirect, Peer: alice.ID})
	if err != nil {
		t.Fatal(err)
	}
	if err := svc.DeleteAccount(ctx, alice, "correct horse"); err != nil {
		t.Fatalf("DeleteAccount() = %v", err)
	}
	for _, u := range []parley.User{bob, carol} {
		if _, _, err := svc.CreateRoom(ctx, u, chat.NewRoom{Kind: parley.KindDirect, Peer: alice.ID}); parley.ErrorCode(err) != parley.CodeNotFound {
			t.Errorf("%s: CreateRoom(direct with the deleted alice) = %v, want not_found", u.Name, err)
		}
	}
	if _, err := store.Member(ctx, direct.ID, alice.ID); parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("Member(direct, alice) = %v, want not_found", err)
	}
}
