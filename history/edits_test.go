package history_test

import (
	"fmt"
	"testing"

	"parley"
	"parley/history"
	"parley/parleytest"
)

// TestChangesForgetBlocks: an edit and a deletion of messages in cached
// blocks show in the next older page, which reads the block again.
func TestChangesForgetBlocks(t *testing.T) {
	var h *history.Store
	inner := &counting{Store: openSQLite(t, func(evs []parley.Event) { h.Apply(evs) })}
	h = history.New(inner, history.Config{})
	u := parleytest.MustCreateUser(t, h, "ann")
	r := parleytest.MustCreateRoom(t, h, u, "long", 0)
	for i := range 250 {
		parleytest.MustSend(t, h, r, u, fmt.Sprint("message ", i+1))
	}
	older := parley.Page{Before: 61, After: -1, Limit: 20} // seqs 41..60, block 0
	if _, err := h.Messages(ctx, r.ID, older); err != nil {
		t.Fatalf("Messages() error = %v", err)
	}
	if got, err := h.Messages(ctx, r.ID, older); err != nil || got[0].Body != "message 60" {
		t.Fatalf("Messages() = %v, %v", seqsOf(got), err)
	}
	parleytest.MustEdit(t, h, r, u, 60, "sixty")
	parleytest.MustDelete(t, h, r, u, 45)
	got, err := h.Messages(ctx, r.ID, older)
	if err != nil || len(got) != 20 {
		t.Fatalf("Messages() after the changes = %v, %v", seqsOf(got), err)
	}
	if got[0].Body != "sixty" || got[0].Change != 1 || got[15].Seq != 45 || got[15].Body != "" || got[15].DeletedAt == nil {
		t.Errorf("older page after the changes = %q (change %d), seq %d %q; want the edit and the tombstone",
			got[0].Body, got[0].Change, got[15].Seq, got[15].Body)
	}
	// The block is cached again afterwards: the next read is from memory.
	if _, err := h.Messages(ctx, r.ID, older); err != nil {
		t.Fatal(err)
	}
	n := inner.calls.Load()
	if again, _ := h.Messages(ctx, r.ID, older); again[0].Body != "sixty" || inner.calls.Load() != n {
		t.Errorf("the block was not cached again after the changes")
	}
}

// TestRootEditForgetsReplies: an edit and a deletion of a thread's root
// show in the excerpt of its replies in cached blocks other than the
// root's.
func TestRootEditForgetsReplies(t *testing.T) {
	var h *history.Store
	inner := &counting{Store: openSQLite(t, func(evs []parley.Event) { h.Apply(evs) })}
	h = history.New(inner, history.Config{})
	u := parleytest.MustCreateUser(t, h, "ann")
	r := parleytest.MustCreateRoom(t, h, u, "long", 0)
	parleytest.MustSend(t, h, r, u, "the root")
	for i := range 250 {
		if i == 150 {
			parleytest.MustReply(t, h, r, u, 1, "a late reply") // seq 152, in another block
			continue
		}
		parleytest.MustSend(t, h, r, u, fmt.Sprint("message ", i+2))
	}
	older := parley.Page{Before: 161, After: -1, Limit: 20} // seqs 141..160
	excerpt := func() string {
		t.Helper()
		got, err := h.Messages(ctx, r.ID, older)
		if err != nil || len(got) != 20 || got[8].Seq != 152 || got[8].ReplyTo == nil {
			t.Fatalf("Messages() = %v, %v", seqsOf(got), err)
		}
		return got[8].ReplyTo.Excerpt
	}
	if got := excerpt(); got != "the root" {
		t.Fatalf("excerpt = %q, want the root's text", got)
	}
	excerpt() // from the block now
	parleytest.MustEdit(t, h, r, u, 1, "the root, edited")
	if got := excerpt(); got != "the root, edited" {
		t.Errorf("excerpt after the root's edit = %q", got)
	}
	parleytest.MustDelete(t, h, r, u, 1)
	if got := excerpt(); got != "" {
		t.Errorf("excerpt after the root's deletion = %q, want none", got)
	}
}

// TestSharedSeesUnrelayedChanges: in cluster mode another node edits and
// deletes messages of a cached block, and its relay of the changes never
// arrives (it died between its commit and its publish). A Shared store
// sees them by the room's change number: the next older page shows them,
// a change in another block costs no reload of this one, and a thread
// root's edit reaches its replies' excerpts in other blocks.
func TestSharedSeesUnrelayedChanges(t *testing.T) {
	db := openSQLite(t, nil) // no commit reaches h: every change is another node's
	inner := &counting{Store: db}
	h := history.New(inner, history.Config{Shared: true})
	u := parleytest.MustCreateUser(t, db, "ann")
	r := parleytest.MustCreateRoom(t, db, u, "long", 0)
	parleytest.MustSend(t, db, r, u, "the root")
	for i := range 300 {
		if i == 150 {
			parleytest.MustReply(t, db, r, u, 1, "a late reply") // seq 152, block 1
			continue
		}
		parleytest.MustSend(t, db, r, u, fmt.Sprint("message ", i+2))
	}
	older := parley.Page{Before: 61, After: -1, Limit: 20}    // seqs 41..60, block 0
	replies := parley.Page{Before: 161, After: -1, Limit: 20} // seqs 141..160, block 1
	read := func(p parley.Page) []parley.Message {
		t.Helper()
		got, err := h.Messages(ctx, r.ID, p)
		if err != nil || len(got) != 20 {
			t.Fatalf("Messages(%+v) = %v, %v", p, seqsOf(got), err)
		}
		return got
	}
	read(older)
	read(replies)
	parleytest.MustEdit(t, db, r, u, 60, "sixty")
	parleytest.MustDelete(t, db, r, u, 45)
	got := read(older)
	if got[0].Body != "sixty" || got[15].Seq != 45 || got[15].Body != "" || got[15].DeletedAt == nil {
		t.Errorf("older page after the changes = %q, seq %d %q; want the edit and the tombstone", got[0].Body, got[15].Seq, got[15].Body)
	}
	n := inner.calls.Load()
	if read(older); inner.calls.Load() != n {
		t.Errorf("block 0 was read again with no change since")
	}
	parleytest.MustEdit(t, db, r, u, 250, "far away") // block 2, not cached
	if read(older); inner.calls.Load() != n {
		t.Errorf("block 0 was read again after a change in another block")
	}
	parleytest.MustEdit(t, db, r, u, 1, "the root, edited")
	if got := read(replies); got[8].Seq != 152 || got[8].ReplyTo == nil || got[8].ReplyTo.Excerpt != "the root, edited" {
		t.Errorf("reply 152 = %+v, want the root's new excerpt", got[8].ReplyTo)
	}
}
