package redis_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
)

// TestHotStoreChangesOutOfOrder: two nodes' applies of two edits of one
// message reach Redis in the wrong order (the newer first): the window and
// the last message keep the newer version, on both nodes.
func TestHotStoreChangesOutOfOrder(t *testing.T) {
	a, b := twoNodes(t)
	ann := parleytest.MustCreateUser(t, a.hot, "ann")
	r := parleytest.MustCreateRoom(t, a.hot, ann, "r", 0)
	var last parley.Message
	for i := range 3 {
		last = parleytest.MustSend(t, a.hot, r, ann, fmt.Sprint("m", i+1))
	}
	for _, n := range []hotNode{a, b} { // warm the window and the last message
		mustMessages(t, n.hot, r.ID, parley.Newest(10))
		parleytest.AllRooms(t, n.hot, ann, 10)
	}
	room := parleytest.MustRoom(t, a.hot, r.ID)
	version := func(change int64, body string) parley.Event {
		m := last
		at := time.Now().UTC().Truncate(time.Microsecond)
		m.Body, m.EditedAt, m.Change = body, &at, change
		rr := room
		rr.LastChange = change
		return parley.Event{Kind: parley.EventEdited, Room: rr, UserID: ann.ID, Message: m}
	}
	// Apply only queues for the node's applier: wait for A's write of
	// change 2 before B writes change 1, so that B's older version really
	// arrives second, as the relay's order makes it in a cluster.
	a.hot.Apply([]parley.Event{version(2, "newer")})
	a.hot.Await(context.Background(), a.hot.Mark())
	b.hot.Apply([]parley.Event{version(1, "older")})
	b.hot.Await(context.Background(), b.hot.Mark())
	for name, n := range map[string]hotNode{"A": a, "B": b} {
		page := mustMessages(t, n.hot, r.ID, parley.Newest(10))
		if len(page) != 3 || page[0].Body != "newer" || page[0].Change != 2 {
			t.Errorf("%s newest page = %+v, want seq 3 at change 2 (newer)", name, page)
		}
		list := parleytest.AllRooms(t, n.hot, ann, 10)
		if len(list) != 1 || list[0].LastMessage == nil || list[0].LastMessage.Body != "newer" {
			t.Errorf("%s room list = %+v, want the last message at change 2", name, list)
		}
	}
}
