package chat_test

import (
	"testing"

	"parley"
	"parley/chat"
)

// TestLeave: leaving a group room one is not in changes nothing, but a
// direct room is not found by anyone outside it, as on every other route;
// its members can leave it.
func TestLeave(t *testing.T) {
	s := chat.New(chat.Config{Store: mustOpenStore(t), KDF: cheap})
	var users []parley.User
	for _, name := range []string{"alice", "bob", "carol"} {
		u, err := s.Register(ctx, name, "correct horse")
		if err != nil {
			t.Fatalf("Register(%s) error = %v", name, err)
		}
		users = append(users, u)
	}
	alice, bob, carol := users[0], users[1], users[2]
	group, _, err := s.CreateRoom(ctx, alice, chat.NewRoom{Kind: parley.KindGroup, Title: "g"})
	if err != nil {
		t.Fatalf("CreateRoom(group) error = %v", err)
	}
	direct, _, err := s.CreateRoom(ctx, alice, chat.NewRoom{Kind: parley.KindDirect, Peer: bob.ID})
	if err != nil {
		t.Fatalf("CreateRoom(direct) error = %v", err)
	}
	for _, tt := range []struct {
		who  parley.User
		room string
		want string // error code, "" for none
	}{
		{carol, group.ID, ""},
		{carol, direct.ID, parley.CodeNotFound},
		{carol, "nope", parley.CodeNotFound},
		{bob, direct.ID, ""},
		{alice, group.ID, ""},
	} {
		if err := s.Leave(ctx, tt.who, tt.room); parley.ErrorCode(err) != tt.want {
			t.Errorf("%s leaves %s: %v, want code %q", tt.who.Name, tt.room, err, tt.want)
		}
	}
	if _, err := s.Authorize(ctx, bob, direct.ID); parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("bob after leaving the direct room: %v, want not_found", err)
	}
}
