package chat_test

import (
	"fmt"
	"testing"
	"time"

	"parley"
	"parley/chat"
	"parley/sqlite"
)

// TestDeleteAccount: a wrong password changes nothing (CodeForbidden);
// the right one revokes every token (OnRevoke hears a nil hash), leaves
// every room (an owner's passes the ownership on), tombstones the user's
// messages and no one else's (or keeps them, KeepMessages), in the rooms
// left before too, shows them under DeletedSenderName, and holds the name
// back from sign-up and login.
func TestDeleteAccount(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(fmt.Sprint("keep=", keep), func(t *testing.T) { testDeleteAccount(t, keep) })
	}
}

func testDeleteAccount(t *testing.T, keep bool) {
	store := mustOpenStore(t)
	var revoked []string
	svc := chat.New(chat.Config{Store: store, KDF: cheap, Accounts: store.(*sqlite.Store), NameHold: time.Hour, KeepMessages: keep,
		OnRevoke: func(userID string, hash []byte) {
			if hash == nil {
				revoked = append(revoked, userID)
			}
		}})
	alice, err := svc.Register(ctx, "alice", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	bob, err := svc.Register(ctx, "bob", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	tok, _, err := svc.Login(ctx, "alice", "correct horse")
	if err != nil {
		t.Fatal(err)
	}
	group, _, err := svc.CreateRoom(ctx, alice, chat.NewRoom{Kind: parley.KindGroup, Title: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Join(ctx, bob, group.ID); err != nil {
		t.Fatal(err)
	}
	direct, _, err := svc.CreateRoom(ctx, alice, chat.NewRoom{Kind: parley.KindDirect, Peer: bob.ID})
	if err != nil {
		t.Fatal(err)
	}
	old, _, err := svc.CreateRoom(ctx, bob, chat.NewRoom{Kind: parley.KindGroup, Title: "left before"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Join(ctx, alice, old.ID); err != nil {
		t.Fatal(err)
	}
	for i, s := range []struct {
		u    parley.User
		room string
	}{{alice, group.ID}, {bob, group.ID}, {alice, group.ID}, {alice, direct.ID}, {bob, direct.ID}, {alice, old.ID}, {alice, old.ID}} {
		if _, _, err := svc.Send(ctx, s.u, s.room, fmt.Sprintf("text %d", i), ""); err != nil {
			t.Fatal(err)
		}
	}
	// One of alice's own deleted before; then she leaves the room.
	if _, err := svc.DeleteMessage(ctx, alice, old.ID, 1, ""); err != nil {
		t.Fatal(err)
	}
	if err := svc.Leave(ctx, alice, old.ID); err != nil {
		t.Fatal(err)
	}

	err = svc.DeleteAccount(ctx, alice, "wrong horse")
	if parley.ErrorCode(err) != parley.CodeForbidden {
		t.Errorf("DeleteAccount(wrong password) = %v, want forbidden", err)
	}
	if _, err := svc.Authenticate(ctx, tok); err != nil || len(revoked) != 0 {
		t.Fatalf("after a wrong password: Authenticate = %v, revoked %v; want the token working", err, revoked)
	}
	if _, err := store.Member(ctx, group.ID, alice.ID); err != nil {
		t.Fatalf("after a wrong password: Member(alice) = %v", err)
	}

	if err := svc.DeleteAccount(ctx, alice, "correct horse"); err != nil {
		t.Fatalf("DeleteAccount() = %v", err)
	}
	// Every token, before the rename and again after it (a login may
	// have raced the deletion).
	if len(revoked) != 2 || revoked[0] != alice.ID || revoked[1] != alice.ID {
		t.Errorf("OnRevoke heard %v, want alice's every token, twice", revoked)
	}
	if _, err := svc.Authenticate(ctx, tok); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("Authenticate(alice's token) = %v, want unauthorized", err)
	}
	if _, _, err := svc.Login(ctx, "alice", "correct horse"); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("Login(alice) = %v, want unauthorized", err)
	}
	if _, err := svc.Register(ctx, "alice", "correct horse"); parley.ErrorCode(err) != parley.CodeNameTaken {
		t.Errorf("Register(alice) = %v, want name_taken while held", err)
	}
	for _, room := range []string{group.ID, direct.ID, old.ID} {
		if _, err := store.Member(ctx, room, alice.ID); parley.ErrorCode(err) != parley.CodeNotFound {
			t.Errorf("Member(%s, alice) = %v, want not_found", room, err)
		}
		ms, err := store.Messages(ctx, room, parley.Page{After: 0, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			alices := m.SenderID == alice.ID
			deleted := alices && (!keep || room == old.ID && m.Seq == 1)
			if deleted != m.Deleted() || deleted && m.Body != "" || !deleted && m.Body == "" {
				t.Errorf("keep %v: message %d of %s by %s: deleted %v, body %q; want deleted %v", keep, m.Seq, room, m.SenderName, m.Deleted(), m.Body, deleted)
			}
			if alices != (m.SenderName == chat.DeletedSenderName) {
				t.Errorf("message %d of %s by %s: sender name %q", m.Seq, room, m.SenderID, m.SenderName)
			}
		}
	}
	if m, err := store.Member(ctx, group.ID, bob.ID); err != nil || m.Role != parley.RoleOwner {
		t.Errorf("Member(group, bob) = %+v, %v, want the owner", m, err)
	}
}

// TestExportMessages: ExportMessages hands over every message the user
// sent in the room, tombstones too, oldest first, over more than one page
// of the store, and nobody else's; ExportRooms lists the user's rooms with
// the membership.
func TestExportMessages(t *testing.T) {
	svc := chat.New(chat.Config{Store: mustOpenStore(t), KDF: cheap})
	alice, _ := svc.Register(ctx, "alice", "correct horse")
	bob, _ := svc.Register(ctx, "bob", "correct horse")
	room, _, err := svc.CreateRoom(ctx, alice, chat.NewRoom{Kind: parley.KindGroup, Title: "g"})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := svc.Join(ctx, bob, room.ID); err != nil {
		t.Fatal(err)
	}
	var want []int64
	for i := range 2*parley.MaxPageLimit + 10 {
		u := bob
		if i%3 != 0 {
			u = alice
		}
		m, _, err := svc.Send(ctx, u, room.ID, fmt.Sprint("text ", i), "")
		if err != nil {
			t.Fatal(err)
		}
		if u == alice {
			want = append(want, m.Seq)
		}
	}
	var got []int64
	err = svc.ExportMessages(ctx, alice, room.ID, func(m *parley.Message) error {
		if m.SenderID != alice.ID {
			t.Errorf("ExportMessages handed over %s's message %d", m.SenderName, m.Seq)
		}
		got = append(got, m.Seq)
		return nil
	})
	if err != nil || fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("ExportMessages() = %v, %v; want %v", got, err, want)
	}
	rooms, err := svc.ExportRooms(ctx, alice)
	if err != nil || len(rooms) != 1 || rooms[0].Room.ID != room.ID || rooms[0].Member.Role != parley.RoleOwner {
		t.Errorf("ExportRooms() = %+v, %v, want the room with alice the owner", rooms, err)
	}
}
