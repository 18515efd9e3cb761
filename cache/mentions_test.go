package cache_test

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"parley"
	"parley/cache"
	"parley/parleytest"
	"parley/sqlite"
)

// TestMentionsSteadyState runs random sends that mention members or
// @room, reads, edits that add or drop mentions, deletions and level
// changes through a warm cache over SQLite, and checks after each that
// every member's room list has the mention counts and levels SQLite's
// has, and that no room list, nor anything else, read the inner store.
func TestMentionsSteadyState(t *testing.T) {
	e := newSQLiteEnv(t, cache.Config{})
	e.populate(t, 4, 6)
	for _, u := range e.user {
		e.checkRooms(t, u, 50) // warm-up
	}
	e.cnt.reset()

	levels := []string{parley.NotifyAll, parley.NotifyMentions, parley.NotifyNone}
	rng := rand.New(rand.NewPCG(5, 6))
	var sent []parley.Message
	for i := range 400 {
		u := e.user[rng.IntN(len(e.user))]
		r := e.room[rng.IntN(len(e.room))]
		if _, err := e.c.Member(ctx, r.ID, u.ID); err != nil {
			continue // not a member
		}
		var what string
		switch k := rng.IntN(10); {
		case k < 4:
			mentions := parley.MentionList("")
			switch rng.IntN(3) {
			case 0:
				mentions = parley.JoinMentions([]string{e.user[rng.IntN(len(e.user))].ID, e.user[rng.IntN(len(e.user))].ID})
			case 1:
				mentions = parley.MentionRoom
			}
			m, _, err := e.c.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: fmt.Sprint("m", i), Mentions: mentions})
			if err != nil {
				t.Fatal(err)
			}
			sent = append(sent, m)
			what = fmt.Sprintf("%s sends %d mentioning %q", u.Name, m.Seq, mentions)
		case k < 6:
			seq := r.LastSeq
			if last, err := e.ref.Room(ctx, r.ID); err == nil && last.LastSeq > 0 {
				seq = rng.Int64N(last.LastSeq + 1)
			}
			if _, err := e.c.MarkRead(ctx, r.ID, u.ID, seq); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("%s reads to %d", u.Name, seq)
		case k < 8 && len(sent) > 0:
			m := sent[rng.IntN(len(sent))]
			mentions := parley.MentionList("")
			if rng.IntN(2) == 0 {
				mentions = parley.JoinMentions([]string{e.user[rng.IntN(len(e.user))].ID})
			}
			if _, err := e.c.EditMessage(ctx, parley.Edit{RoomID: m.RoomID, Seq: m.Seq, EditorID: m.SenderID, Body: fmt.Sprint("edit", i), Mentions: mentions}); err != nil {
				continue // deleted
			}
			what = fmt.Sprintf("seq %d edited to mention %q", m.Seq, mentions)
		case k < 9 && len(sent) > 0:
			m := sent[rng.IntN(len(sent))]
			if _, _, err := e.c.DeleteMessage(ctx, parley.Deletion{RoomID: m.RoomID, Seq: m.Seq, ActorID: m.SenderID}); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("seq %d deleted", m.Seq)
		default:
			level := levels[rng.IntN(len(levels))]
			if err := e.c.SetNotifyLevel(ctx, r.ID, u.ID, level); err != nil {
				t.Fatal(err)
			}
			what = fmt.Sprintf("%s's level %s", u.Name, level)
		}
		for _, v := range e.user {
			want, _, err := e.ref.Rooms(ctx, v.ID, "", 50)
			if err != nil {
				t.Fatal(err)
			}
			got, _, err := e.c.Rooms(ctx, v.ID, "", 50)
			if err != nil || len(got) != len(want) {
				t.Fatalf("after %s: Rooms(%s) = %d entries, %v; want %d", what, v.Name, len(got), err, len(want))
			}
			for j := range got {
				if got[j].Room.ID != want[j].Room.ID || got[j].Mentions != want[j].Mentions || got[j].Notifications != want[j].Notifications {
					t.Fatalf("after %s: %s's entry of %s = %d mentions, level %q; SQLite has %d, %q",
						what, v.Name, got[j].Room.Title, got[j].Mentions, got[j].Notifications, want[j].Mentions, want[j].Notifications)
				}
			}
		}
	}
	if n := e.cnt.reset(); n["Rooms"] != 0 {
		t.Errorf("inner reads: %v, want no Rooms (the room lists served from memory)", n)
	}
}

// TestMentionsLoadBeforeApply: a room list that loads a member's mention
// state from SQLite after a mention was committed and before the cache
// applied its event counts it once, not again when the event arrives.
func TestMentionsLoadBeforeApply(t *testing.T) {
	var c *cache.Store
	var held []parley.Event
	hold := false
	inner, err := sqlite.Open(ctx, sqlite.Config{
		Path: filepath.Join(t.TempDir(), "parley.db"),
		Sync: sqlite.SyncOff,
		OnCommit: func(events []parley.Event) {
			if hold {
				held = append(held, events...)
				return
			}
			c.Apply(events)
		},
	})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	cnt := newCounting(inner)
	c = cache.New(cnt, cache.Config{MaxRooms: 1})
	t.Cleanup(func() { c.Close() })
	alice := parleytest.MustCreateUser(t, c, "alice")
	bob := parleytest.MustCreateUser(t, c, "bob")
	r := parleytest.MustCreateRoom(t, c, alice, "r", 0)
	parleytest.MustJoin(t, c, r, bob)
	// A cache that starts now holds nothing of r, so that bob's list
	// loads r's info from SQLite, at the commits the events have not
	// brought yet. (Evicting r by caching another room was a coin toss:
	// the sweep may evict the other room instead.) The first cache is
	// dropped, not closed: Close closes the inner store they share.
	c = cache.New(cnt, cache.Config{MaxRooms: 1})

	hold = true // the writer's events wait: the commit is visible, not applied
	for i, mentions := range []parley.MentionList{parley.MentionList(bob.ID), parley.MentionRoom} {
		if _, _, err := c.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: alice.ID, SenderName: alice.Name, Body: fmt.Sprint("hi ", i), Mentions: mentions}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Members(ctx, r.ID); err != nil { // @room finds bob by them
		t.Fatal(err)
	}
	es, _, err := c.Rooms(ctx, bob.ID, "", 10)
	if err != nil || len(es) != 1 || es[0].Mentions != 2 {
		t.Fatalf("bob's room list before the events are applied = %+v, %v; want 2 mentions", es, err)
	}
	hold = false
	c.Apply(held)
	cnt.reset()
	es, _, err = c.Rooms(ctx, bob.ID, "", 10)
	if err != nil || len(es) != 1 || es[0].Mentions != 2 {
		t.Errorf("bob's room list once the events are applied = %+v, %v; want 2 mentions, each counted once", es, err)
	}
	if n := cnt.reset(); len(n) != 0 {
		t.Errorf("bob's room list once the events are applied read %v, want it from memory", n)
	}
}
