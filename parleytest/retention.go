package parleytest

import (
	"cmp"
	"context"
	"slices"
	"testing"
	"time"

	"parley"
)

// RunExpiryTests checks a store's parley.Expiry (retention.go at the
// root): which messages are expired, under the server's default and under
// a room's own retention, shorter or longer; the paging of a pass; and
// that a moderator's deletion with no actor (the sweeper's) tombstones
// them.
func RunExpiryTests(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	ex, ok := s.(parley.Expiry)
	if !ok {
		t.Fatalf("%T does not implement parley.Expiry", s)
	}
	alice := MustCreateUser(t, s, "alice")
	bob := MustCreateUser(t, s, "bob")
	one := MustCreateRoom(t, s, alice, "one", 0)
	two := MustCreateRoom(t, s, bob, "two", 0)
	MustJoin(t, s, one, bob)
	MustSend(t, s, one, alice, "old one 1")
	MustSend(t, s, two, bob, "old two 1")
	MustSend(t, s, one, bob, "old one 2")
	MustSend(t, s, one, alice, "old one 3 deleted")
	MustDelete(t, s, one, alice, 3)
	MustSend(t, s, two, bob, "old two 2")
	cut := MustSend(t, s, one, alice, "new one 4")
	MustSend(t, s, two, bob, "new two 3")

	want := []parley.MessageRef{{RoomID: one.ID, Seq: 1}, {RoomID: one.ID, Seq: 2}, {RoomID: two.ID, Seq: 1}, {RoomID: two.ID, Seq: 2}}
	slices.SortFunc(want, func(a, b parley.MessageRef) int {
		return cmp.Or(cmp.Compare(a.RoomID, b.RoomID), cmp.Compare(a.Seq, b.Seq))
	})
	// A default of an hour, an hour after message 4: what came before it.
	const def = time.Hour
	now := cut.SentAt.Add(def)
	if got, err := ex.Expired(ctx, now, 0, parley.MessageRef{}, 100); err != nil || len(got) != 0 {
		t.Errorf("Expired(no default, no room's own) = %v, %v, want none", got, err)
	}
	got, err := ex.Expired(ctx, now, def, parley.MessageRef{}, 100)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Expired(before message 4 of one) = %v, %v, want %v", got, err, want)
	}
	// A pass one message at a time sees each once, in the same order.
	var paged []parley.MessageRef
	var after parley.MessageRef
	for range 10 {
		page, err := ex.Expired(ctx, now, def, after, 1)
		if err != nil {
			t.Fatalf("Expired(after %v) error = %v", after, err)
		}
		paged = append(paged, page...)
		if len(page) < 1 {
			break
		}
		after = page[0]
	}
	if !slices.Equal(paged, want) {
		t.Errorf("Expired one at a time = %v, want %v", paged, want)
	}

	for _, r := range want {
		m, deleted, err := s.DeleteMessage(ctx, parley.Deletion{RoomID: r.RoomID, Seq: r.Seq, Moderator: true})
		if err != nil || !deleted || m.Body != "" || m.DeletedAt == nil {
			t.Errorf("DeleteMessage(%v, no actor, moderator) = %+v, %v, %v, want a new tombstone", r, m, deleted, err)
		}
	}
	if got, err := ex.Expired(ctx, now, def, parley.MessageRef{}, 100); err != nil || len(got) != 0 {
		t.Errorf("Expired() after the deletions = %v, %v, want none", got, err)
	}
	msgs, err := s.Messages(ctx, one.ID, parley.Page{After: 0, Limit: 10})
	if err != nil || len(msgs) != 4 || msgs[3].Body != "new one 4" || msgs[0].Body != "" {
		t.Errorf("Messages(one) after the deletions = %+v, %v, want 3 tombstones and message 4", msgs, err)
	}

	// A room's own retention replaces the default, shorter or longer:
	// short keeps a minute, long two hours, one and two the default.
	minute, twoHours := int64(60), int64(2*60*60)
	short := MustCreateRoom(t, s, alice, "short", 0)
	long := MustCreateRoom(t, s, alice, "long", 0)
	for _, set := range []struct {
		room parley.Room
		secs *int64
	}{{short, &minute}, {long, &twoHours}} {
		if _, err := s.UpdateRoom(ctx, set.room.ID, alice.ID, parley.RoomUpdate{RetentionSeconds: set.secs}); err != nil {
			t.Fatalf("UpdateRoom(%s, retention %d) error = %v", set.room.Title, *set.secs, err)
		}
	}
	MustSend(t, s, short, alice, "short 1")
	last := MustSend(t, s, long, alice, "long 1")
	// Without a default, only short's, a minute on.
	wantShort := []parley.MessageRef{{RoomID: short.ID, Seq: 1}}
	if got, err := ex.Expired(ctx, last.SentAt.Add(2*time.Minute), 0, parley.MessageRef{}, 100); err != nil || !slices.Equal(got, wantShort) {
		t.Errorf("Expired(no default, 2 min on) = %v, %v, want %v", got, err, wantShort)
	}
	// 90 minutes on with the default of an hour: one's, two's and
	// short's, not long's (its own two hours win over the default).
	want = []parley.MessageRef{{RoomID: one.ID, Seq: 4}, {RoomID: two.ID, Seq: 3}, {RoomID: short.ID, Seq: 1}}
	slices.SortFunc(want, func(a, b parley.MessageRef) int { return cmp.Compare(a.RoomID, b.RoomID) })
	if got, err := ex.Expired(ctx, last.SentAt.Add(90*time.Minute), def, parley.MessageRef{}, 100); err != nil || !slices.Equal(got, want) {
		t.Errorf("Expired(default an hour, 90 min on) = %v, %v, want %v", got, err, want)
	}
	// Three hours on, long's too.
	want = append(want, parley.MessageRef{RoomID: long.ID, Seq: 1})
	slices.SortFunc(want, func(a, b parley.MessageRef) int { return cmp.Compare(a.RoomID, b.RoomID) })
	if got, err := ex.Expired(ctx, last.SentAt.Add(3*time.Hour), def, parley.MessageRef{}, 100); err != nil || !slices.Equal(got, want) {
		t.Errorf("Expired(default an hour, 3 h on) = %v, %v, want %v", got, err, want)
	}
}
