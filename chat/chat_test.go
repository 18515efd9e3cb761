package chat_test

import (
	"context"
	"strings"
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

// TestRoomNotFoundText: an unknown room id and a direct room of others get
// the same not_found answer, word for word, from every operation, so that
// the answer does not tell a hidden room from no room.
func TestRoomNotFoundText(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testRoomNotFoundText(t, mustOpenStore(t)) })
	// A store whose own text names the id (as the stores' did): the
	// service must not pass it on.
	t.Run("store naming the id", func(t *testing.T) { testRoomNotFoundText(t, namingStore{mustOpenStore(t)}) })
}

// namingStore answers an unknown room with a text that names its id.
type namingStore struct{ parley.Store }

func (s namingStore) Room(ctx context.Context, id string) (parley.Room, error) {
	r, err := s.Store.Room(ctx, id)
	if parley.ErrorCode(err) == parley.CodeNotFound {
		err = parley.Errorf(parley.CodeNotFound, "room %s not found", id)
	}
	return r, err
}

func testRoomNotFoundText(t *testing.T, store parley.Store) {
	s := chat.New(chat.Config{Store: store, KDF: cheap})
	var users []parley.User
	for _, name := range []string{"alice", "bob", "carol"} {
		u, err := s.Register(ctx, name, "correct horse")
		if err != nil {
			t.Fatalf("Register(%s) error = %v", name, err)
		}
		users = append(users, u)
	}
	alice, bob, carol := users[0], users[1], users[2]
	direct, _, err := s.CreateRoom(ctx, alice, chat.NewRoom{Kind: parley.KindDirect, Peer: bob.ID})
	if err != nil {
		t.Fatalf("CreateRoom(direct) error = %v", err)
	}
	unknown := parley.NewID()
	for _, tt := range []struct {
		name string
		op   func(roomID string) error
	}{
		{"Room", func(id string) error { _, err := s.Room(ctx, carol, id); return err }},
		{"Join", func(id string) error { _, _, err := s.Join(ctx, carol, id); return err }},
		{"Leave", func(id string) error { return s.Leave(ctx, carol, id) }},
		{"Authorize", func(id string) error { _, err := s.Authorize(ctx, carol, id); return err }},
		{"Messages", func(id string) error { _, err := s.Messages(ctx, carol, id, parley.Newest(10)); return err }},
		{"Send", func(id string) error { _, _, err := s.Send(ctx, carol, id, "hi", ""); return err }},
		{"MarkRead", func(id string) error { _, err := s.MarkRead(ctx, carol, id, 1); return err }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hidden, missing := tt.op(direct.ID), tt.op(unknown)
			if parley.ErrorCode(hidden) != parley.CodeNotFound || parley.ErrorCode(missing) != parley.CodeNotFound {
				t.Fatalf("%s(direct room of others) = %v, %s(unknown) = %v; want not_found for both", tt.name, hidden, tt.name, missing)
			}
			if h, m := parley.ErrorMessage(hidden), parley.ErrorMessage(missing); h != m {
				t.Errorf("%s(direct room of others) = %q, %s(unknown) = %q; want the same text", tt.name, h, tt.name, m)
			}
		})
	}
}

// TestSendClientID: an idempotency key must be short text, whatever the
// transport: it goes back out in every MESSAGE frame's client-id header.
func TestSendClientID(t *testing.T) {
	s := chat.New(chat.Config{Store: mustOpenStore(t), KDF: cheap})
	u, err := s.Register(ctx, "alice", "correct horse")
	if err != nil {
		t.Fatalf("Register error = %v", err)
	}
	r, _, err := s.CreateRoom(ctx, u, chat.NewRoom{Kind: parley.KindGroup, Title: "g"})
	if err != nil {
		t.Fatalf("CreateRoom error = %v", err)
	}
	for _, tt := range []struct {
		name, id, want string // want: error code, "" for none
	}{
		{"none", "", ""},
		{"text", "c-42 ünïcode", ""},
		{"longest", strings.Repeat("x", chat.MaxClientID), ""},
		{"too long", strings.Repeat("x", chat.MaxClientID+1), parley.CodeInvalid},
		{"NUL", "a\x00b", parley.CodeInvalid},
		{"newline", "a\nb", parley.CodeInvalid},
		{"DEL", "a\x7fb", parley.CodeInvalid},
		{"C1 control", "a\u0085b", parley.CodeInvalid},
		{"invalid UTF-8", "a\xffb", parley.CodeInvalid},
	} {
		if _, _, err := s.Send(ctx, u, r.ID, "hi", tt.id); parley.ErrorCode(err) != tt.want {
			t.Errorf("%s: Send(client id %q) = %v, want code %q", tt.name, tt.id, err, tt.want)
		}
	}
}
