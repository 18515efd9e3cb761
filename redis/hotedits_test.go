package redis_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
	"parley/redis"
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

// TestHotStoreDeleteOvertakesSend: node A's write of its new message to
// Redis comes late (its applier is behind, or Redis was unreachable from A
// alone and the write is owed), and node B deletes the message meanwhile.
// A's late write must not bring the deleted text back, as the room's last
// message or in its newest page, on either node.
func TestHotStoreDeleteOvertakesSend(t *testing.T) {
	rdb, prefix := testClient(t)
	dbURL := pgtest.Schema(t)
	b := openNode(t, dbURL, rdb, prefix, nil)
	var (
		mu   sync.Mutex
		hold bool
		held []parley.Event
		hot  *redis.HotStore
	)
	ready := make(chan struct{})
	pg, err := postgres.Open(context.Background(), postgres.Config{URL: dbURL, OnCommit: func(evs []parley.Event) {
		<-ready
		mu.Lock()
		defer mu.Unlock()
		if hold {
			held = append(held, evs...)
			return
		}
		hot.Apply(evs)
	}})
	if err != nil {
		t.Fatalf("postgres.Open() error = %v", err)
	}
	hot = redis.NewHotStore(pg, rdb, redis.HotConfig{Prefix: prefix, RecentMessages: 20})
	close(ready)
	t.Cleanup(func() { hot.Close() })
	a := hotNode{pg: pg, hot: hot}

	ann := parleytest.MustCreateUser(t, a.hot, "ann")
	r := parleytest.MustCreateRoom(t, a.hot, ann, "r", 0)
	for i := range 3 {
		parleytest.MustSend(t, a.hot, r, ann, fmt.Sprint("m", i+1))
	}
	for _, n := range []hotNode{a, b} { // the window and the last message end at m3 in Redis
		mustMessages(t, n.hot, r.ID, parley.Newest(10))
		parleytest.AllRooms(t, n.hot, ann, 10)
	}
	mu.Lock()
	hold = true
	mu.Unlock()
	m4 := parleytest.MustSend(t, a.hot, r, ann, "secret")
	if _, _, err := b.hot.DeleteMessage(context.Background(), parley.Deletion{RoomID: r.ID, Seq: m4.Seq, ActorID: ann.ID}); err != nil {
		t.Fatalf("DeleteMessage() error = %v", err)
	}
	b.hot.Await(context.Background(), b.hot.Mark())
	mu.Lock()
	hold = false
	late := held
	mu.Unlock()
	a.hot.Apply(late) // A's write of "secret" arrives after B's deletion
	a.hot.Await(context.Background(), a.hot.Mark())
	for name, n := range map[string]hotNode{"A": a, "B": b} {
		list := parleytest.AllRooms(t, n.hot, ann, 10)
		if len(list) != 1 || list[0].LastMessage == nil {
			t.Fatalf("%s room list = %+v, want one room with a last message", name, list)
		}
		if lm := list[0].LastMessage; lm.Seq != m4.Seq || lm.Body != "" || lm.DeletedAt == nil {
			t.Errorf("%s last message = seq %d %q deleted %v, want seq %d deleted", name, lm.Seq, lm.Body, lm.DeletedAt, m4.Seq)
		}
		if page := mustMessages(t, n.hot, r.ID, parley.Newest(10)); len(page) != 4 || page[0].Body != "" || page[0].DeletedAt == nil {
			t.Errorf("%s newest page = %+v, want seq 4 deleted first", name, page)
		}
	}
}
