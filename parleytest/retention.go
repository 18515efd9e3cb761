package parleytest

import (
	"cmp"
	"context"
	"slices"
	"testing"

	"parley"
)

// RunExpiryTests checks a store's parley.Expiry (retention.go at the
// root): which messages are expired, the paging of a pass, and that a
// moderator's deletion with no actor (the sweeper's) tombstones them.
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
	got, err := ex.Expired(ctx, cut.SentAt, parley.MessageRef{}, 100)
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("Expired(before message 4 of one) = %v, %v, want %v", got, err, want)
	}
	// A pass one message at a time sees each once, in the same order.
	var paged []parley.MessageRef
	var after parley.MessageRef
	for range 10 {
		page, err := ex.Expired(ctx, cut.SentAt, after, 1)
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
	if got, err := ex.Expired(ctx, cut.SentAt, parley.MessageRef{}, 100); err != nil || len(got) != 0 {
		t.Errorf("Expired() after the deletions = %v, %v, want none", got, err)
	}
	msgs, err := s.Messages(ctx, one.ID, parley.Page{After: 0, Limit: 10})
	if err != nil || len(msgs) != 4 || msgs[3].Body != "new one 4" || msgs[0].Body != "" {
		t.Errorf("Messages(one) after the deletions = %+v, %v, want 3 tombstones and message 4", msgs, err)
	}
}
