package chat_test

import (
	"strings"
	"testing"
	"time"

	"parley"
	"parley/chat"
	"parley/sqlite"
)

// Probe: AddMember checks that the user exists with store.User, which
// still finds a deleted account (renamed "deleted-user:<id>"), and
// store.Join does not check that the user is live: an owner or admin (or
// a bot's key of the scope rooms) adds a deleted account back into a room,
// a ghost member that takes a seat and shows in the member list,
// although a deleted account leaves every room for good (docs/api.md,
// "Deleting your account").
func TestProbeAddMemberDeletedAccount(t *testing.T) {
	store := mustOpenStore(t)
	s := chat.New(chat.Config{Store: store, KDF: cheap, Accounts: store.(*sqlite.Store), NameHold: time.Hour})
	owner, err := s.Register(ctx, "owner", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	gone, err := s.Register(ctx, "leaver", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	room, _, err := s.CreateRoom(ctx, owner, chat.NewRoom{Kind: parley.KindGroup, Title: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteAccount(ctx, gone, "correct horse"); err != nil {
		t.Fatalf("DeleteAccount error = %v", err)
	}
	e, added, err := s.AddMember(ctx, owner, room.ID, gone.ID)
	if err == nil {
		t.Errorf("AddMember(a deleted account) = %+v (added %v), nil error; want not_found", e, added)
	} else if parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("AddMember(a deleted account) error = %v, want not_found", err)
	}
	ms, _, err := s.Members(ctx, owner, room.ID, "", 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		if m.User.ID == gone.ID || strings.HasPrefix(m.User.Name, "deleted-user:") {
			t.Errorf("the room lists the deleted account as a member: %+v", m.User)
		}
	}
}
