package chat_test

import (
	"testing"

	"parley"
	"parley/chat"
)

// authzWorld is a group room and a direct room with a caller of every kind.
type authzWorld struct {
	s *chat.Service
	// group: owner and member are in it, left joined and left, outsider
	// never joined. direct: owner and peer; gone was the peer of a direct
	// room with owner and left it; outsider is in neither.
	owner, member, left, outsider, peer, gone parley.User
	group, direct, goneDirect                 parley.Room
}

func newAuthzWorld(t *testing.T) *authzWorld {
	t.Helper()
	w := &authzWorld{s: chat.New(chat.Config{Store: mustOpenStore(t), KDF: cheap})}
	for _, u := range []struct {
		p    *parley.User
		name string
	}{{&w.owner, "owner"}, {&w.member, "member"}, {&w.left, "left"}, {&w.outsider, "outsider"}, {&w.peer, "peer"}, {&w.gone, "gone"}} {
		var err error
		if *u.p, err = w.s.Register(ctx, u.name, "correct horse"); err != nil {
			t.Fatalf("Register(%s) error = %v", u.name, err)
		}
	}
	var err error
	if w.group, _, err = w.s.CreateRoom(ctx, w.owner, chat.NewRoom{Kind: parley.KindGroup, Title: "g"}); err != nil {
		t.Fatalf("CreateRoom(group) error = %v", err)
	}
	for _, u := range []parley.User{w.member, w.left} {
		if _, _, err := w.s.Join(ctx, u, w.group.ID); err != nil {
			t.Fatalf("Join(%s) error = %v", u.Name, err)
		}
	}
	if err := w.s.Leave(ctx, w.left, w.group.ID); err != nil {
		t.Fatalf("Leave(left) error = %v", err)
	}
	if w.direct, _, err = w.s.CreateRoom(ctx, w.owner, chat.NewRoom{Kind: parley.KindDirect, Peer: w.peer.ID}); err != nil {
		t.Fatalf("CreateRoom(direct) error = %v", err)
	}
	if w.goneDirect, _, err = w.s.CreateRoom(ctx, w.owner, chat.NewRoom{Kind: parley.KindDirect, Peer: w.gone.ID}); err != nil {
		t.Fatalf("CreateRoom(direct with gone) error = %v", err)
	}
	if err := w.s.Leave(ctx, w.gone, w.goneDirect.ID); err != nil {
		t.Fatalf("Leave(gone) error = %v", err)
	}
	for _, r := range []parley.Room{w.group, w.direct, w.goneDirect} {
		if _, _, err := w.s.Send(ctx, w.owner, r.ID, "hello", ""); err != nil {
			t.Fatalf("Send(owner, %s) error = %v", r.Kind, err)
		}
	}
	return w
}

// TestAuthorization runs every room operation as every kind of caller, on
// a fresh world per operation, and checks the outcome's error code:
// members may do everything; anyone may read a group room's info, join it
// and leave it (a no-op when not in it), but only members read or post;
// a direct room answers not_found to everyone but its two members, so that
// it cannot be told from a room that does not exist.
func TestAuthorization(t *testing.T) {
	type caller int
	const (
		groupMember caller = iota
		groupLeft
		groupOutsider
		directPeer
		directGone
		directOutsider
		unknownRoom
		numCallers
	)
	names := [numCallers]string{"group member", "left the group", "group outsider", "direct peer", "left the direct room", "direct outsider", "unknown room"}
	const ok, forbidden, notFound = "", parley.CodeForbidden, parley.CodeNotFound
	ops := []struct {
		name string
		do   func(w *authzWorld, u parley.User, roomID string) error
		want [numCallers]string
	}{
		{"Room", func(w *authzWorld, u parley.User, id string) error { _, err := w.s.Room(ctx, u, id); return err },
			[numCallers]string{ok, ok, ok, ok, notFound, notFound, notFound}},
		{"Authorize", func(w *authzWorld, u parley.User, id string) error { _, err := w.s.Authorize(ctx, u, id); return err },
			[numCallers]string{ok, forbidden, forbidden, ok, notFound, notFound, notFound}},
		{"Messages", func(w *authzWorld, u parley.User, id string) error {
			_, err := w.s.Messages(ctx, u, id, parley.Page{Limit: 10})
			return err
		}, [numCallers]string{ok, forbidden, forbidden, ok, notFound, notFound, notFound}},
		{"Send", func(w *authzWorld, u parley.User, id string) error {
			_, _, err := w.s.Send(ctx, u, id, "hi", "")
			return err
		},
			[numCallers]string{ok, forbidden, forbidden, ok, notFound, notFound, notFound}},
		{"MarkRead", func(w *authzWorld, u parley.User, id string) error { _, err := w.s.MarkRead(ctx, u, id, 1); return err },
			[numCallers]string{ok, forbidden, forbidden, ok, notFound, notFound, notFound}},
		{"Join", func(w *authzWorld, u parley.User, id string) error { _, _, err := w.s.Join(ctx, u, id); return err },
			[numCallers]string{ok, ok, ok, ok, notFound, notFound, notFound}},
		{"Leave", func(w *authzWorld, u parley.User, id string) error { return w.s.Leave(ctx, u, id) },
			[numCallers]string{ok, ok, ok, ok, notFound, notFound, notFound}},
		// People (people.go; TestPeopleAuthorization has owners, admins,
		// removed and banned users): only members see a room's people; a
		// plain member and a direct room's peer moderate nothing.
		{"Members", func(w *authzWorld, u parley.User, id string) error {
			_, _, err := w.s.Members(ctx, u, id, "", 10)
			return err
		},
			[numCallers]string{ok, notFound, notFound, ok, notFound, notFound, notFound}},
		{"UpdateRoom", func(w *authzWorld, u parley.User, id string) error {
			title := "t"
			_, err := w.s.UpdateRoom(ctx, u, id, chat.RoomUpdate{Title: &title})
			return err
		}, [numCallers]string{forbidden, notFound, notFound, forbidden, notFound, notFound, notFound}},
		{"SetRole", func(w *authzWorld, u parley.User, id string) error {
			_, err := w.s.SetRole(ctx, u, id, w.owner.ID, parley.RoleMember)
			return err
		}, [numCallers]string{forbidden, notFound, notFound, forbidden, notFound, notFound, notFound}},
		{"Remove", func(w *authzWorld, u parley.User, id string) error { return w.s.Remove(ctx, u, id, w.owner.ID, true) },
			[numCallers]string{forbidden, notFound, notFound, forbidden, notFound, notFound, notFound}},
		{"Unban", func(w *authzWorld, u parley.User, id string) error { return w.s.Unban(ctx, u, id, w.left.ID) },
			[numCallers]string{forbidden, notFound, notFound, forbidden, notFound, notFound, notFound}},
		{"Bans", func(w *authzWorld, u parley.User, id string) error { _, err := w.s.Bans(ctx, u, id); return err },
			[numCallers]string{forbidden, notFound, notFound, forbidden, notFound, notFound, notFound}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			w := newAuthzWorld(t)
			cases := [numCallers]struct {
				u    parley.User
				room string
			}{
				groupMember:    {w.member, w.group.ID},
				groupLeft:      {w.left, w.group.ID},
				groupOutsider:  {w.outsider, w.group.ID},
				directPeer:     {w.peer, w.direct.ID},
				directGone:     {w.gone, w.goneDirect.ID},
				directOutsider: {w.outsider, w.direct.ID},
				unknownRoom:    {w.member, "no-such-room"},
			}
			notFoundText := ""
			for c, tc := range cases {
				err := op.do(w, tc.u, tc.room)
				if got := parley.ErrorCode(err); got != op.want[c] {
					t.Errorf("%s as %s: %v, want code %q", op.name, names[c], err, op.want[c])
				}
				// A hidden direct room and an unknown room read alike.
				if op.want[c] == notFound && err != nil {
					if notFoundText == "" {
						notFoundText = err.Error()
					} else if err.Error() != notFoundText {
						t.Errorf("%s as %s: %q, want the same text as every not_found: %q", op.name, names[c], err, notFoundText)
					}
				}
			}
		})
	}
}
