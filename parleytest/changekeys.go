package parleytest

import (
	"context"

	"sync"
	"testing"

	"parley"
)

// changeEvents counts the edited and deleted events rec holds.
func changeEvents(rec *Recorder) int {
	n := 0
	for _, ev := range rec.Events() {
		if ev.Kind == parley.EventEdited || ev.Kind == parley.EventDeleted {
			n++
		}
	}
	return n
}

// sameVersion reports whether a and b are one version of one message.
func sameVersion(a, b parley.Message) bool {
	return a.ID == b.ID && a.Seq == b.Seq && a.Body == b.Body && a.Change == b.Change &&
		(a.EditedAt == nil) == (b.EditedAt == nil) && (a.EditedAt == nil || a.EditedAt.Equal(*b.EditedAt)) &&
		(a.DeletedAt == nil) == (b.DeletedAt == nil) && (a.DeletedAt == nil || a.DeletedAt.Equal(*b.DeletedAt))
}

// testChangeKeys: a change's client_id (design §5 idempotency, applied to
// edits and deletions): a repeat applies nothing and answers as the first
// time; the key reused for another change is refused; keys are per user and
// per room, and apart from sends' client_ids.
func testChangeKeys(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	alice, bob := MustCreateUser(t, s, "alice"), MustCreateUser(t, s, "bob")
	room := MustCreateRoom(t, s, alice, "keys", 0)
	other := MustCreateRoom(t, s, alice, "other", 0)
	MustJoin(t, s, room, bob)
	m1, _, err := s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: alice.ID, SenderName: alice.Name, Body: "one", ClientID: "k-send"})
	if err != nil {
		t.Fatalf("Send() error = %v", err)
	}
	m2 := MustSend(t, s, room, alice, "two")
	m3 := MustSend(t, s, room, bob, "bob's")
	m4 := MustSend(t, s, room, alice, "four")
	o1 := MustSend(t, s, other, alice, "elsewhere")
	edit := func(u parley.User, r parley.Room, seq int64, body, key string) (parley.Message, error) {
		return s.EditMessage(ctx, parley.Edit{RoomID: r.ID, Seq: seq, EditorID: u.ID, Body: body, ClientID: key})
	}
	del := func(u parley.User, r parley.Room, seq int64, mod bool, key string) (parley.Message, bool, error) {
		return s.DeleteMessage(ctx, parley.Deletion{RoomID: r.ID, Seq: seq, ActorID: u.ID, Moderator: mod, ClientID: key})
	}
	wantChanges := func(step string, events int, last int64) {
		t.Helper()
		if got := changeEvents(rec); got != events {
			t.Errorf("%s: %d change events, want %d", step, got, events)
		}
		if got := MustRoom(t, s, room.ID).LastChange; got != last {
			t.Errorf("%s: room's last_change = %d, want %d", step, got, last)
		}
	}

	// A repeated edit: one change, the same answer.
	e1, err := edit(alice, room, m1.Seq, "one, edited", "k-edit")
	if err != nil || e1.Change != 1 || e1.Body != "one, edited" || e1.EditedAt == nil {
		t.Fatalf("EditMessage(k-edit) = %+v, %v; want change 1", e1, err)
	}
	for i := range 2 {
		again, err := edit(alice, room, m1.Seq, "one, edited", "k-edit")
		if err != nil || !sameVersion(again, e1) {
			t.Errorf("repeat %d of EditMessage(k-edit) = %+v, %v; want %+v", i+1, again, err, e1)
		}
	}
	wantChanges("a repeated edit", 1, 1)

	// A repeated deletion: one change, the same tombstone, deleted false.
	d2, deleted, err := del(alice, room, m2.Seq, false, "k-del")
	if err != nil || !deleted || d2.Change != 2 || d2.DeletedAt == nil {
		t.Fatalf("DeleteMessage(k-del) = %+v, %v, %v; want change 2", d2, deleted, err)
	}
	again, deleted, err := del(alice, room, m2.Seq, false, "k-del")
	if err != nil || deleted || !sameVersion(again, d2) {
		t.Errorf("repeat of DeleteMessage(k-del) = %+v, %v, %v; want %+v, deleted false", again, deleted, err, d2)
	}
	// A moderator's keyed deletion of another's message.
	d3, deleted, err := del(alice, room, m3.Seq, true, "k-mod")
	if err != nil || !deleted || d3.Change != 3 {
		t.Fatalf("DeleteMessage(moderator, k-mod) = %+v, %v, %v; want change 3", d3, deleted, err)
	}
	if again, deleted, err := del(alice, room, m3.Seq, true, "k-mod"); err != nil || deleted || !sameVersion(again, d3) {
		t.Errorf("repeat of DeleteMessage(moderator, k-mod) = %+v, %v, %v; want %+v", again, deleted, err, d3)
	}
	wantChanges("repeated deletions", 3, 3)

	// The key reused for another change: refused, nothing applied.
	for _, tc := range []struct {
		call string
		err  error
	}{
		{"edit, k-edit, another body", second(edit(alice, room, m1.Seq, "one, again", "k-edit"))},
		{"edit, k-edit, another seq", second(edit(alice, room, m4.Seq, "one, edited", "k-edit"))},
		{"delete, k-edit, the same seq", third(del(alice, room, m1.Seq, false, "k-edit"))},
		{"delete, k-edit, another seq", third(del(alice, room, m4.Seq, false, "k-edit"))},
		{"edit, k-del, another seq", second(edit(alice, room, m4.Seq, "four, edited", "k-del"))},
		{"delete, k-del, another seq", third(del(alice, room, m4.Seq, false, "k-del"))},
		{"delete, k-mod, another seq", third(del(alice, room, m4.Seq, true, "k-mod"))},
	} {
		wantCode(t, "reused key: "+tc.call, tc.err, parley.CodeConflict)
	}
	wantChanges("reused keys", 3, 3)
	if got, err := s.Messages(ctx, room.ID, parley.Newest(10)); err != nil || len(got) != 4 || got[0].Body != "four" || got[0].Change != 0 || got[3].Body != "one, edited" || got[3].Change != 1 {
		t.Errorf("after the reused keys, history = %+v, %v; want message 1 at change 1, message 4 untouched", got, err)
	}

	// A key is the user's own, in its room, apart from sends' client_ids.
	if m, err := edit(alice, other, o1.Seq, "elsewhere, edited", "k-edit"); err != nil || m.Change != 1 {
		t.Errorf("EditMessage(k-edit, another room) = %+v, %v; want applied, change 1 of that room", m, err)
	}
	bobs := MustSend(t, s, room, bob, "bob's second")
	if m, err := edit(bob, room, bobs.Seq, "bob's, edited", "k-edit"); err != nil || m.Change != 4 {
		t.Errorf("EditMessage(bob, k-edit) = %+v, %v; want applied, change 4", m, err)
	}
	if m, err := edit(alice, room, m4.Seq, "four, edited", "k-send"); err != nil || m.Change != 5 {
		t.Errorf("EditMessage(k-send, a send's client_id) = %+v, %v; want applied, change 5", m, err)
	}
	wantChanges("keys of others", 6, 5)

	// A later change since: a repeat returns the message as it is now,
	// applies nothing, and is never refused for its body.
	e1b, err := edit(alice, room, m1.Seq, "one, edited twice", "k-edit2")
	if err != nil || e1b.Change != 6 {
		t.Fatalf("EditMessage(k-edit2) = %+v, %v; want change 6", e1b, err)
	}
	for _, body := range []string{"one, edited", "any text"} {
		if m, err := edit(alice, room, m1.Seq, body, "k-edit"); err != nil || !sameVersion(m, e1b) {
			t.Errorf("EditMessage(k-edit %q) after a later edit = %+v, %v; want the later version %+v", body, m, err, e1b)
		}
	}
	gone, _, err := del(alice, room, m1.Seq, false, "")
	if err != nil || gone.Change != 7 {
		t.Fatalf("DeleteMessage(1) = %+v, %v; want change 7", gone, err)
	}
	for _, key := range []string{"k-edit", "k-edit2"} {
		if m, err := edit(alice, room, m1.Seq, "one, edited twice", key); err != nil || !sameVersion(m, gone) {
			t.Errorf("EditMessage(%s) after a deletion = %+v, %v; want the tombstone %+v", key, m, err, gone)
		}
	}
	// A fresh edit of the tombstone is still refused.
	wantCode(t, "EditMessage(tombstone, new key)", second(edit(alice, room, m1.Seq, "back", "k-new")), parley.CodeConflict)
	// Deleting a tombstone applies nothing and keeps no key: the key
	// stays free for a change.
	if _, deleted, err := del(alice, room, m1.Seq, false, "k-free"); err != nil || deleted {
		t.Errorf("DeleteMessage(tombstone, k-free) = deleted %v, %v; want nothing deleted", deleted, err)
	}
	if m, err := edit(alice, room, m4.Seq, "four, third", "k-free"); err != nil || m.Change != 8 {
		t.Errorf("EditMessage(k-free) = %+v, %v; want applied, change 8", m, err)
	}
	// A refused change keeps no key either.
	wantCode(t, "EditMessage(bob's as alice)", second(edit(alice, room, bobs.Seq, "not mine", "k-refused")), parley.CodeForbidden)
	if m, err := edit(alice, room, m4.Seq, "four, fourth", "k-refused"); err != nil || m.Change != 9 {
		t.Errorf("EditMessage(k-refused) = %+v, %v; want applied, change 9", m, err)
	}
	wantChanges("later changes", 10, 9)
}

// testChangeKeysConcurrent: the same keyed edit and deletion sent many times
// at once apply once; every caller gets the same answer.
func testChangeKeysConcurrent(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	alice := MustCreateUser(t, s, "alice")
	room := MustCreateRoom(t, s, alice, "keys", 0)
	m1, m2 := MustSend(t, s, room, alice, "one"), MustSend(t, s, room, alice, "two")
	const n = 16
	edits, dels := make([]parley.Message, n), make([]parley.Message, n)
	applied := make([]bool, n)
	errs := make([]error, 2*n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			edits[i], errs[i] = s.EditMessage(ctx, parley.Edit{RoomID: room.ID, Seq: m1.Seq, EditorID: alice.ID, Body: "one, edited", ClientID: "k-edit"})
		})
		wg.Go(func() {
			dels[i], applied[i], errs[n+i] = s.DeleteMessage(ctx, parley.Deletion{RoomID: room.ID, Seq: m2.Seq, ActorID: alice.ID, ClientID: "k-del"})
		})
	}
	wg.Wait()
	deletions := 0
	for i := range n {
		if errs[i] != nil || errs[n+i] != nil {
			t.Fatalf("call %d: errors %v, %v", i, errs[i], errs[n+i])
		}
		if !sameVersion(edits[i], edits[0]) || !sameVersion(dels[i], dels[0]) {
			t.Errorf("call %d got changes %d and %d, call 0 changes %d and %d: want one answer", i, edits[i].Change, dels[i].Change, edits[0].Change, dels[0].Change)
		}
		if applied[i] {
			deletions++
		}
	}
	if deletions != 1 {
		t.Errorf("%d calls deleted, want 1", deletions)
	}
	if got := changeEvents(rec); got != 2 {
		t.Errorf("%d change events, want 2", got)
	}
	if last := MustRoom(t, s, room.ID).LastChange; last != 2 || edits[0].Change+dels[0].Change != 3 {
		t.Errorf("last_change %d, changes %d and %d; want 2, and 1 and 2", last, edits[0].Change, dels[0].Change)
	}
}

func second[A any](_ A, err error) error        { return err }
func third[A, B any](_ A, _ B, err error) error { return err }

// KeyedChanges is what MakeKeyedChanges did, for RepeatKeyedChanges.
type KeyedChanges struct {
	Room          parley.Room
	User          parley.User
	Edited, Gone  parley.Message // the keyed edit's and deletion's answers
	Untouched     parley.Message // a message no change touched
	EditKey, DKey string
}

// MakeKeyedChanges applies a keyed edit and a keyed deletion on s, for
// RepeatKeyedChanges to repeat on the same database later (after a
// restart) or through another node.
func MakeKeyedChanges(t testing.TB, s parley.Store) KeyedChanges {
	t.Helper()
	ctx := context.Background()
	k := KeyedChanges{User: MustCreateUser(t, s, "keyed"), EditKey: "k-edit", DKey: "k-del"}
	k.Room = MustCreateRoom(t, s, k.User, "keyed", 0)
	m1, m2 := MustSend(t, s, k.Room, k.User, "one"), MustSend(t, s, k.Room, k.User, "two")
	k.Untouched = MustSend(t, s, k.Room, k.User, "three")
	var err error
	if k.Edited, err = s.EditMessage(ctx, parley.Edit{RoomID: k.Room.ID, Seq: m1.Seq, EditorID: k.User.ID, Body: "one, edited", ClientID: k.EditKey}); err != nil {
		t.Fatalf("EditMessage(%s) error = %v", k.EditKey, err)
	}
	var deleted bool
	if k.Gone, deleted, err = s.DeleteMessage(ctx, parley.Deletion{RoomID: k.Room.ID, Seq: m2.Seq, ActorID: k.User.ID, ClientID: k.DKey}); err != nil || !deleted {
		t.Fatalf("DeleteMessage(%s) = deleted %v, %v", k.DKey, deleted, err)
	}
	return k
}

// RepeatKeyedChanges repeats MakeKeyedChanges' changes on s, which holds
// the same database: each applies nothing and gets the first answer, the
// keys reused for other changes are refused, and the room's last_change
// stays at 2.
func RepeatKeyedChanges(t testing.TB, s parley.Store, k KeyedChanges) {
	t.Helper()
	ctx := context.Background()
	if m, err := s.EditMessage(ctx, parley.Edit{RoomID: k.Room.ID, Seq: k.Edited.Seq, EditorID: k.User.ID, Body: "one, edited", ClientID: k.EditKey}); err != nil || !sameVersion(m, k.Edited) {
		t.Errorf("repeated EditMessage(%s) = %+v, %v; want %+v", k.EditKey, m, err, k.Edited)
	}
	if m, deleted, err := s.DeleteMessage(ctx, parley.Deletion{RoomID: k.Room.ID, Seq: k.Gone.Seq, ActorID: k.User.ID, ClientID: k.DKey}); err != nil || deleted || !sameVersion(m, k.Gone) {
		t.Errorf("repeated DeleteMessage(%s) = %+v, %v, %v; want %+v, deleted false", k.DKey, m, deleted, err, k.Gone)
	}
	_, err := s.EditMessage(ctx, parley.Edit{RoomID: k.Room.ID, Seq: k.Untouched.Seq, EditorID: k.User.ID, Body: "three, edited", ClientID: k.EditKey})
	if parley.ErrorCode(err) != parley.CodeConflict {
		t.Errorf("EditMessage(%s, another seq) error = %v, want conflict", k.EditKey, err)
	}
	_, _, err = s.DeleteMessage(ctx, parley.Deletion{RoomID: k.Room.ID, Seq: k.Untouched.Seq, ActorID: k.User.ID, ClientID: k.DKey})
	if parley.ErrorCode(err) != parley.CodeConflict {
		t.Errorf("DeleteMessage(%s, another seq) error = %v, want conflict", k.DKey, err)
	}
	if last := MustRoom(t, s, k.Room.ID).LastChange; last != 2 {
		t.Errorf("room's last_change = %d after the repeats, want 2", last)
	}
}
