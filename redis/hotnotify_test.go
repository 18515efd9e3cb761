package redis_test

import (
	"context"
	"sync/atomic"
	"testing"

	goredis "github.com/redis/go-redis/v9"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
	"parley/redis"
)

// statesCounter is a node's PostgreSQL store that counts its NotifyStates
// calls.
type statesCounter struct {
	*postgres.Store
	calls atomic.Int64
}

func (s *statesCounter) NotifyStates(ctx context.Context, userID string) (map[string]parley.RoomNotify, error) {
	s.calls.Add(1)
	return s.Store.NotifyStates(ctx, userID)
}

// countedNode is a hotNode whose HotStore wraps a statesCounter.
type countedNode struct {
	inner *statesCounter
	hot   *redis.HotStore
}

// openCountedNode opens a node on database dbURL and Redis prefix, as
// openNode does, over a statesCounter.
func openCountedNode(t testing.TB, dbURL string, rdb *goredis.Client, prefix string) countedNode {
	t.Helper()
	var inner *statesCounter
	n := openNodeOver(t, dbURL, rdb, redis.HotConfig{Prefix: prefix, RecentMessages: 20}, nil, func(pg *postgres.Store) parley.Store {
		inner = &statesCounter{Store: pg}
		return inner
	})
	return countedNode{inner: inner, hot: n.hot}
}

// BenchmarkHotRoomsWarm: one user's warm room list (30 rooms, mentions
// unread in 10) on one node, nothing changing. It reports the inner
// store's NotifyStates calls per list:
//
//	PARLEY_TEST_POSTGRES=… PARLEY_TEST_REDIS=… go test -run - -bench HotRoomsWarm ./redis/
func BenchmarkHotRoomsWarm(b *testing.B) {
	rdb, prefix := testClient(b)
	n := openCountedNode(b, pgtest.Schema(b), rdb, prefix)
	ann := parleytest.MustCreateUser(b, n.hot, "ann")
	bob := parleytest.MustCreateUser(b, n.hot, "bob")
	for i := range 30 {
		r := parleytest.MustCreateRoom(b, n.hot, ann, "room", 0)
		parleytest.MustJoin(b, n.hot, r, bob)
		var ms parley.MentionList
		if i%3 == 0 {
			ms = parley.MentionList(bob.ID)
		}
		for range 3 {
			if _, _, err := n.hot.Send(context.Background(), parley.NewMessage{RoomID: r.ID, SenderID: ann.ID, SenderName: "ann", Body: "x", Mentions: ms}); err != nil {
				b.Fatal(err)
			}
		}
	}
	parleytest.AllRooms(b, n.hot, bob, 50) // warm
	before := n.inner.calls.Load()
	b.ResetTimer()
	for range b.N {
		if _, _, err := n.hot.Rooms(context.Background(), bob.ID, "", 50); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n.inner.calls.Load()-before)/float64(b.N), "notifystates/op")
}

// entryOf returns u's room list entry of room on s.
func entryOf(t *testing.T, s parley.Store, u parley.User, room parley.Room) parley.RoomEntry {
	t.Helper()
	for _, e := range parleytest.AllRooms(t, s, u, 10) {
		if e.Room.ID == room.ID {
			return e
		}
	}
	t.Fatalf("%s's room list has no %s", u.Name, room.Title)
	return parley.RoomEntry{}
}

// TestHotStoreNotifyMemo: a warm room list asks PostgreSQL for the
// mention counts and levels once while nothing changes; a level set, a
// mention sent, an edit, a deletion or a read through another node, and a
// leave and rejoin there, show on this node's very next list.
func TestHotStoreNotifyMemo(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testClient(t)
	dbURL := pgtest.Schema(t)
	a, b := openCountedNode(t, dbURL, rdb, prefix), openCountedNode(t, dbURL, rdb, prefix)
	ann := parleytest.MustCreateUser(t, a.hot, "ann")
	bob := parleytest.MustCreateUser(t, a.hot, "bob")
	room := parleytest.MustCreateRoom(t, a.hot, ann, "room", 0)
	other := parleytest.MustCreateRoom(t, a.hot, ann, "other", 0)
	parleytest.MustJoin(t, a.hot, room, bob)
	parleytest.MustJoin(t, a.hot, other, bob)
	send := func(n countedNode, body string, mentions ...string) parley.Message {
		t.Helper()
		m, _, err := n.hot.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: ann.ID, SenderName: ann.Name, Body: body,
			Mentions: parley.JoinMentions(mentions)})
		if err != nil {
			t.Fatalf("Send(%q) error = %v", body, err)
		}
		return m
	}
	m1 := send(a, "hi @bob", bob.ID)
	want := func(what string, level string, mentions int64) {
		t.Helper()
		if e := entryOf(t, a.hot, bob, room); e.Notifications != level || e.Mentions != mentions {
			t.Errorf("%s: A's entry = level %q, %d mentions; want %q, %d", what, e.Notifications, e.Mentions, level, mentions)
		}
	}

	// (1) Warm: the second list asks nothing.
	want("first list", parley.NotifyAll, 1)
	before := a.inner.calls.Load()
	want("second list", parley.NotifyAll, 1)
	if got := a.inner.calls.Load() - before; got != 0 {
		t.Errorf("a warm room list with nothing changed called NotifyStates %d times, want 0", got)
	}

	// (2) A level set on B shows on A's next list.
	if err := b.hot.SetNotifyLevel(ctx, room.ID, bob.ID, parley.NotifyNone); err != nil {
		t.Fatal(err)
	}
	want("after level none on B", parley.NotifyNone, 0)
	if err := b.hot.SetNotifyLevel(ctx, room.ID, bob.ID, parley.NotifyAll); err != nil {
		t.Fatal(err)
	}
	want("after level all on B", parley.NotifyAll, 1)

	// (3) Mentions sent, edited, deleted and read through B.
	m2 := send(b, "again @bob", bob.ID)
	want("after a mention sent on B", parley.NotifyAll, 2)
	if _, err := b.hot.EditMessage(ctx, parley.Edit{RoomID: room.ID, Seq: m1.Seq, EditorID: ann.ID, Body: "hi"}); err != nil {
		t.Fatal(err)
	}
	want("after an edit on B drops a mention", parley.NotifyAll, 1)
	send(b, "no mention")
	want("after a message without mentions on B", parley.NotifyAll, 1)
	if _, _, err := b.hot.DeleteMessage(ctx, parley.Deletion{RoomID: room.ID, Seq: m2.Seq, ActorID: ann.ID}); err != nil {
		t.Fatal(err)
	}
	want("after a deletion on B", parley.NotifyAll, 0)
	m4 := send(b, "@room", parley.MentionRoom)
	want("after @room on B", parley.NotifyAll, 1)
	if _, err := b.hot.MarkRead(ctx, room.ID, bob.ID, m4.Seq); err != nil {
		t.Fatal(err)
	}
	want("after a read on B", parley.NotifyAll, 0)

	// (4) Level none, then a leave and a rejoin on B with no list
	// between: the rejoined room is back at level all although its seq,
	// change and unread count have not moved.
	if err := b.hot.SetNotifyLevel(ctx, room.ID, bob.ID, parley.NotifyNone); err != nil {
		t.Fatal(err)
	}
	want("level none before the leave", parley.NotifyNone, 0)
	if _, err := b.hot.Leave(ctx, room.ID, bob.ID); err != nil {
		t.Fatal(err)
	}
	parleytest.MustJoin(t, b.hot, room, bob)
	want("after a leave and rejoin on B", parley.NotifyAll, 0)

	// And warm again.
	before = a.inner.calls.Load()
	want("warm again", parley.NotifyAll, 0)
	if got := a.inner.calls.Load() - before; got != 0 {
		t.Errorf("the warm room list at the end called NotifyStates %d times, want 0", got)
	}
}
