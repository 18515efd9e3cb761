package parleytest

import (
	"context"
	"slices"
	"testing"
	"time"

	"parley"
)

// UserDeleter is the part of a store that deletes an account (design
// §3b, DELETE /api/me): sqlite.Store and postgres.Store implement it.
type UserDeleter interface {
	DeleteUser(ctx context.Context, u parley.User, holdUntil time.Time) error
	RenameSender(ctx context.Context, roomID string, seq int64, senderID, name string) (parley.Message, error)
	SenderRooms(ctx context.Context, userID string) ([]string, error)
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

// RunRenameSenderTests checks RenameSender and SenderRooms on the stores
// newStore makes, which must implement UserDeleter: a renamed message or
// tombstone keeps its text and times under the new name, takes the room's
// next change and says so in an event of its kind; another sender's
// message, one already renamed, and an unknown one change nothing; the
// rooms of a sender include those it left.
func RunRenameSenderTests(t *testing.T, newStore NewStoreFunc) {
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	d, ok := s.(UserDeleter)
	if !ok {
		t.Fatalf("%T does not implement UserDeleter", s)
	}
	ctx := context.Background()
	alice, bob := MustCreateUser(t, s, "alice"), MustCreateUser(t, s, "bob")
	room := MustCreateRoom(t, s, alice, "r", 0)
	left := MustCreateRoom(t, s, bob, "left", 0)
	MustJoin(t, s, room, bob)
	MustJoin(t, s, left, alice)
	m1 := MustSend(t, s, room, alice, "kept text")
	m2 := MustSend(t, s, room, alice, "to delete")
	m3 := MustSend(t, s, room, bob, "bob's")
	MustSend(t, s, left, alice, "in a room left")
	if _, err := s.Leave(ctx, left.ID, alice.ID); err != nil {
		t.Fatalf("Leave error = %v", err)
	}
	if _, _, err := s.DeleteMessage(ctx, parley.Deletion{RoomID: room.ID, Seq: m2.Seq, ActorID: alice.ID}); err != nil {
		t.Fatalf("DeleteMessage error = %v", err)
	}
	rooms, err := d.SenderRooms(ctx, alice.ID)
	slices.Sort(rooms)
	want := []string{room.ID, left.ID}
	slices.Sort(want)
	if err != nil || !slices.Equal(rooms, want) {
		t.Errorf("SenderRooms(alice) = %v, %v; want %v", rooms, err, want)
	}
	if rooms, err := d.SenderRooms(ctx, "nobody"); err != nil || len(rooms) != 0 {
		t.Errorf("SenderRooms(nobody) = %v, %v; want none", rooms, err)
	}

	mark := len(rec.Events())
	got, err := d.RenameSender(ctx, room.ID, m1.Seq, alice.ID, "Deleted user")
	if err != nil || got.SenderName != "Deleted user" || got.Body != "kept text" || got.EditedAt != nil || got.Change != 2 {
		t.Errorf("RenameSender(m1) = %+v, %v; want the text under the new name, change 2, not edited", got, err)
	}
	got, err = d.RenameSender(ctx, room.ID, m2.Seq, alice.ID, "Deleted user")
	if err != nil || got.SenderName != "Deleted user" || got.DeletedAt == nil || got.Change != 3 {
		t.Errorf("RenameSender(tombstone) = %+v, %v; want the tombstone under the new name, change 3", got, err)
	}
	// Nothing changes: again, another's message.
	if got, err := d.RenameSender(ctx, room.ID, m1.Seq, alice.ID, "Deleted user"); err != nil || got.Change != 2 {
		t.Errorf("RenameSender(m1 again) = %+v, %v; want it as it is, change 2", got, err)
	}
	if got, err := d.RenameSender(ctx, room.ID, m3.Seq, alice.ID, "Deleted user"); err != nil || got.SenderName != "bob" || got.Change != 0 {
		t.Errorf("RenameSender(bob's as alice) = %+v, %v; want bob's message unchanged", got, err)
	}
	_, err = d.RenameSender(ctx, room.ID, 99, alice.ID, "Deleted user")
	wantCode(t, "RenameSender(unknown seq)", err, parley.CodeNotFound)

	var kinds []parley.EventKind
	for _, e := range rec.Events()[mark:] {
		kinds = append(kinds, e.Kind)
		if e.Message.SenderName != "Deleted user" || e.Room.LastChange != e.Message.Change {
			t.Errorf("event %v = message %+v, room last_change %d", e.Kind, e.Message, e.Room.LastChange)
		}
	}
	if !slices.Equal(kinds, []parley.EventKind{parley.EventEdited, parley.EventDeleted}) {
		t.Errorf("events = %v, want edited, deleted", kinds)
	}
	page, err := s.Messages(ctx, room.ID, parley.Page{Limit: 10})
	if err != nil || len(page) != 3 {
		t.Fatalf("Messages = %d, %v", len(page), err)
	}
	for _, m := range page {
		want := "Deleted user"
		if m.SenderID == bob.ID {
			want = "bob"
		}
		if m.SenderName != want {
			t.Errorf("stored message %d sender_name = %q, want %q", m.Seq, m.SenderName, want)
		}
	}
	if ch, err := s.Changed(ctx, room.ID, 1, 10); err != nil || len(ch) != 2 || ch[0].Seq != m1.Seq || ch[1].Seq != m2.Seq {
		t.Errorf("Changed(after 1) = %+v, %v; want m1 then the tombstone", ch, err)
	}
}
