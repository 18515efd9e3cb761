package chat_test

import (
	"fmt"
	"testing"

	"parley"
	"parley/chat"
)

// TestPinsWhoMay: the owner and an admin pin and unpin, a member may not
// (CodeForbidden), either member of a direct room may; every member reads
// the list, outsiders may not; bad input stores nothing. On SQLite, and
// on PostgreSQL when PARLEY_TEST_POSTGRES is set.
func TestPinsWhoMay(t *testing.T) {
	eachStore(t, func(t *testing.T, open func(t *testing.T) fileDB) {
		db := open(t)
		s := chat.New(chat.Config{Store: db, KDF: cheap})
		users := map[string]parley.User{}
		for _, name := range []string{"owner", "admin", "member", "outsider", "peer"} {
			u, err := s.Register(ctx, name, "correct horse")
			if err != nil {
				t.Fatalf("Register(%s) error = %v", name, err)
			}
			users[name] = u
		}
		owner, admin, member, outsider, peer := users["owner"], users["admin"], users["member"], users["outsider"], users["peer"]
		g, _, err := s.CreateRoom(ctx, owner, chat.NewRoom{Kind: parley.KindGroup, Title: "g"})
		if err != nil {
			t.Fatal(err)
		}
		other, _, err := s.CreateRoom(ctx, owner, chat.NewRoom{Kind: parley.KindGroup, Title: "other"})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range []parley.User{admin, member} {
			if _, _, err := s.Join(ctx, u, g.ID); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := s.SetRole(ctx, owner, g.ID, admin.ID, parley.RoleAdmin); err != nil {
			t.Fatal(err)
		}
		direct, _, err := s.CreateRoom(ctx, owner, chat.NewRoom{Kind: parley.KindDirect, Peer: peer.ID})
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, _, err := s.Send(ctx, member, g.ID, fmt.Sprint("words ", i+1), ""); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 5 {
			if _, _, err := s.Send(ctx, owner, other.ID, fmt.Sprint("elsewhere ", i+1), ""); err != nil {
				t.Fatal(err)
			}
		}
		if _, _, err := s.Send(ctx, owner, direct.ID, "between us", ""); err != nil {
			t.Fatal(err)
		}
		if _, err := s.DeleteMessage(ctx, owner, g.ID, 3, ""); err != nil {
			t.Fatal(err)
		}

		m, changed, err := s.PinMessage(ctx, owner, g.ID, 1, true)
		if err != nil || !changed || m.Pinned == nil || m.Pinned.By != owner.ID {
			t.Fatalf("owner pins = %+v, changed %v, %v; want pinned by owner", m.Pinned, changed, err)
		}
		if m, changed, err = s.PinMessage(ctx, admin, g.ID, 2, true); err != nil || !changed || m.Pinned.By != admin.ID {
			t.Errorf("admin pins = %+v, changed %v, %v; want pinned by admin", m.Pinned, changed, err)
		}
		if _, changed, err := s.PinMessage(ctx, peer, direct.ID, 1, true); err != nil || !changed {
			t.Errorf("peer pins in a direct room = changed %v, %v; want pinned", changed, err)
		}
		before, _ := db.Room(ctx, g.ID)
		for _, tc := range []struct {
			name string
			err  error
			want string
		}{
			{"member pins", ignore3(s.PinMessage(ctx, member, g.ID, 2, true)), parley.CodeForbidden},
			{"member unpins", ignore3(s.PinMessage(ctx, member, g.ID, 1, false)), parley.CodeForbidden},
			{"outsider pins", ignore3(s.PinMessage(ctx, outsider, g.ID, 2, true)), parley.CodeForbidden},
			{"outsider pins in a direct room", ignore3(s.PinMessage(ctx, outsider, direct.ID, 1, true)), parley.CodeNotFound},
			{"unknown seq", ignore3(s.PinMessage(ctx, owner, g.ID, 99, true)), parley.CodeNotFound},
			{"another room's seq", ignore3(s.PinMessage(ctx, owner, g.ID, 5, true)), parley.CodeNotFound},
			{"seq 0", ignore3(s.PinMessage(ctx, owner, g.ID, 0, true)), parley.CodeInvalid},
			{"deleted message", ignore3(s.PinMessage(ctx, owner, g.ID, 3, true)), parley.CodeConflict},
			{"unknown room", ignore3(s.PinMessage(ctx, owner, "nope", 1, true)), parley.CodeNotFound},
			{"outsider lists", ignore(s.Pins(ctx, outsider, g.ID, 0, 10)), parley.CodeForbidden},
			{"bad limit", ignore(s.Pins(ctx, member, g.ID, 0, 0)), parley.CodeInvalid},
			{"negative before", ignore(s.Pins(ctx, member, g.ID, -1, 10)), parley.CodeInvalid},
		} {
			if got := parley.ErrorCode(tc.err); got != tc.want {
				t.Errorf("%s: error = %v, want %s", tc.name, tc.err, tc.want)
			}
		}
		if after, _ := db.Room(ctx, g.ID); after.LastChange != before.LastChange {
			t.Errorf("refusals moved last_change from %d to %d", before.LastChange, after.LastChange)
		}
		pins, err := s.Pins(ctx, member, g.ID, 0, 10)
		if err != nil || len(pins) != 2 || pins[0].Seq != 2 || pins[1].Seq != 1 {
			t.Errorf("member lists = %+v, %v; want 2 then 1", pins, err)
		}
		if _, changed, err := s.PinMessage(ctx, admin, g.ID, 1, false); err != nil || !changed {
			t.Errorf("admin unpins the owner's pin = changed %v, %v", changed, err)
		}
		if pins, _ := s.Pins(ctx, member, g.ID, 0, 10); len(pins) != 1 || pins[0].Seq != 2 {
			t.Errorf("after the unpin = %+v, want only 2", pins)
		}
		// Deleting a pinned message unpins it.
		if _, err := s.DeleteMessage(ctx, member, g.ID, 2, ""); err != nil {
			t.Fatal(err)
		}
		if pins, _ := s.Pins(ctx, member, g.ID, 0, 10); len(pins) != 0 {
			t.Errorf("after deleting the pinned message = %+v, want none", pins)
		}
	})
}
