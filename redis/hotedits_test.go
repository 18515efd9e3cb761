package redis_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
	"parley/redis"

	goredis "github.com/redis/go-redis/v9"
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

// heldNode is a node whose commits reach its HotStore's applier only
// when released: its Redis writes are late (its applier is behind, or
// Redis was unreachable from it alone and the writes are owed).
type heldNode struct {
	hotNode
	mu   sync.Mutex
	hold bool
	held []parley.Event
}

// openHeld opens a held node; with a node id, it announces its changes
// (HotStore.Intend) as cluster mode does.
func openHeld(t *testing.T, dbURL string, rdb *goredis.Client, prefix, node string) *heldNode {
	t.Helper()
	n := &heldNode{}
	ready := make(chan struct{})
	var before func(map[string]int) func(bool)
	if node != "" {
		before = func(rooms map[string]int) func(bool) {
			<-ready
			after := n.hot.Intend(rooms)
			return func(committed bool) {
				n.mu.Lock()
				held := n.hold
				n.mu.Unlock()
				if !held { // a held batch never reaches the applier: as if the node died first
					after(committed)
				}
			}
		}
	}
	pg, err := postgres.Open(context.Background(), postgres.Config{URL: dbURL, BeforeChanges: before, OnCommit: func(evs []parley.Event) {
		<-ready
		n.mu.Lock()
		defer n.mu.Unlock()
		if n.hold {
			n.held = append(n.held, evs...)
			return
		}
		n.hot.Apply(evs)
	}})
	if err != nil {
		t.Fatalf("postgres.Open() error = %v", err)
	}
	n.pg, n.hot = pg, redis.NewHotStore(pg, rdb, redis.HotConfig{Prefix: prefix, RecentMessages: 20, Node: node})
	close(ready)
	t.Cleanup(func() { n.hot.Close() })
	return n
}

// setHold holds the node's next commits back (on), or stops holding
// them and writes what it held to Redis.
func (n *heldNode) setHold(t *testing.T, on bool) {
	t.Helper()
	n.mu.Lock()
	n.hold = on
	late := n.held
	n.held = nil
	n.mu.Unlock()
	if !on {
		n.hot.Apply(late)
		n.hot.Await(context.Background(), n.hot.Mark())
	}
}

// lateWorld is a room of three messages whose window and last message
// are in Redis, a node A whose writes can be held back, and a node B.
func lateWorld(t *testing.T) (a *heldNode, b hotNode, ann parley.User, r parley.Room) {
	return warmWorld(t, func(s parley.Store, r parley.Room, ann parley.User) {
		for i := range 3 {
			parleytest.MustSend(t, s, r, ann, fmt.Sprint("m", i+1))
		}
	})
}

// warmWorld is a room filled by fill, whose window and last message are
// in Redis, a node A whose writes can be held back, and a node B.
func warmWorld(t *testing.T, fill func(s parley.Store, r parley.Room, ann parley.User)) (a *heldNode, b hotNode, ann parley.User, r parley.Room) {
	rdb, prefix := testClient(t)
	dbURL := pgtest.Schema(t)
	b = openNode(t, dbURL, rdb, prefix, nil)
	a = openHeld(t, dbURL, rdb, prefix, "")
	ann = parleytest.MustCreateUser(t, a.hot, "ann")
	r = parleytest.MustCreateRoom(t, a.hot, ann, "r", 0)
	fill(a.hot, r, ann)
	for _, n := range []hotNode{a.hotNode, b} {
		mustMessages(t, n.hot, r.ID, parley.Newest(10))
		parleytest.AllRooms(t, n.hot, ann, 10)
	}
	return a, b, ann, r
}

// wantTombstone checks, on both nodes, that message seq shows deleted in
// the newest page and, when last, as the room's last message.
func wantTombstone(t *testing.T, a, b hotNode, ann parley.User, roomID string, seq int64, last bool) {
	t.Helper()
	for name, n := range map[string]hotNode{"A": a, "B": b} {
		for _, m := range mustMessages(t, n.hot, roomID, parley.Newest(10)) {
			if m.Seq == seq && (m.Body != "" || m.DeletedAt == nil) {
				t.Errorf("%s newest page: seq %d = %q deleted %v, want the tombstone", name, m.Seq, m.Body, m.DeletedAt)
			}
		}
		if !last {
			continue
		}
		list := parleytest.AllRooms(t, n.hot, ann, 10)
		if len(list) != 1 || list[0].LastMessage == nil {
			t.Fatalf("%s room list = %+v, want one room with a last message", name, list)
		}
		if lm := list[0].LastMessage; lm.Seq != seq || lm.Body != "" || lm.DeletedAt == nil {
			t.Errorf("%s last message = seq %d %q deleted %v, want seq %d deleted", name, lm.Seq, lm.Body, lm.DeletedAt, seq)
		}
	}
}

// TestHotStoreDeleteOvertakesSend: node A's write of its new message to
// Redis comes late, and node B deletes the message meanwhile. A's late
// write must not bring the deleted text back, as the room's last message
// or in its newest page, on either node.
func TestHotStoreDeleteOvertakesSend(t *testing.T) {
	a, b, ann, r := lateWorld(t)
	a.setHold(t, true)
	m4 := parleytest.MustSend(t, a.hot, r, ann, "secret")
	parleytest.MustDelete(t, b.hot, r, ann, m4.Seq)
	b.hot.Await(context.Background(), b.hot.Mark())
	a.setHold(t, false) // A's write of "secret" arrives after B's deletion
	wantTombstone(t, a.hotNode, b, ann, r.ID, m4.Seq, true)
}

// TestHotStoreDeleteBelowTop: as TestHotStoreDeleteOvertakesSend, but a
// later message of B's reaches Redis before the deletion, so the deleted
// message lies below the window's top.
func TestHotStoreDeleteBelowTop(t *testing.T) {
	a, b, ann, r := lateWorld(t)
	a.setHold(t, true)
	m4 := parleytest.MustSend(t, a.hot, r, ann, "secret")
	parleytest.MustSend(t, b.hot, r, ann, "m5")
	parleytest.MustDelete(t, b.hot, r, ann, m4.Seq)
	b.hot.Await(context.Background(), b.hot.Mark())
	a.setHold(t, false)
	wantTombstone(t, a.hotNode, b, ann, r.ID, m4.Seq, false)
}

// TestHotStoreHoleAboveStart: an empty room's window holds only its start
// marker; A's first two messages are late and B reacts to the second, so
// the window holds the marker and message 2: a hole, which the newest
// page must take as a miss, not as a room of one message.
func TestHotStoreHoleAboveStart(t *testing.T) {
	rdb, prefix := testClient(t)
	dbURL := pgtest.Schema(t)
	b := openNode(t, dbURL, rdb, prefix, nil)
	a := openHeld(t, dbURL, rdb, prefix, "")
	ann := parleytest.MustCreateUser(t, a.hot, "ann")
	r := parleytest.MustCreateRoom(t, a.hot, ann, "r", 0)
	for _, n := range []hotNode{a.hotNode, b} { // the window is the start marker alone
		mustMessages(t, n.hot, r.ID, parley.Newest(10))
	}
	a.setHold(t, true)
	parleytest.MustSend(t, a.hot, r, ann, "m1")
	m2 := parleytest.MustSend(t, a.hot, r, ann, "m2")
	parleytest.MustReact(t, b.hot, r, ann, m2.Seq, "👍", true)
	b.hot.Await(context.Background(), b.hot.Mark())
	if got := seqs(mustMessages(t, b.hot, r.ID, parley.Newest(10))); fmt.Sprint(got) != "[2 1]" {
		t.Errorf("B newest page seqs = %v, want [2 1]", got)
	}
}

// TestHotStoreRecoverStoppedNode: node A deletes a message and stops
// before its write reaches Redis (it died between the commit and the
// write). Node B serves the deleted text from Redis until it learns that
// A is gone (RecoverGone, with a listing of the live nodes without A);
// then the room's hot data is reloaded from the store. Changes written,
// and changes that commit nothing (a refused edit), leave nothing
// announced; a written change does not take back the announcement of a
// later one that is not.
func TestHotStoreRecoverStoppedNode(t *testing.T) {
	rdb, prefix := testClient(t)
	dbURL := pgtest.Schema(t)
	a := openHeld(t, dbURL, rdb, prefix, "node-a")
	b := openHeld(t, dbURL, rdb, prefix, "node-b")
	ann := parleytest.MustCreateUser(t, a.hot, "ann")
	r := parleytest.MustCreateRoom(t, a.hot, ann, "r", 0)
	for i := range 3 {
		parleytest.MustSend(t, a.hot, r, ann, fmt.Sprint("secret ", i+1))
	}
	parleytest.MustEdit(t, b.hot, r, ann, 1, "edited by B") // B's change, written
	bob := parleytest.MustCreateUser(t, a.hot, "bob")
	if _, err := a.hot.EditMessage(context.Background(), parley.Edit{RoomID: r.ID, Seq: 2, EditorID: bob.ID, Body: "x"}); err == nil {
		t.Fatal("bob edited ann's message")
	}
	for _, n := range []*heldNode{a, b} {
		mustMessages(t, n.hot, r.ID, parley.Newest(10))
		parleytest.AllRooms(t, n.hot, ann, 10)
	}
	for _, node := range []string{"node-a", "node-b"} {
		parleytest.Eventually(t, 10*time.Second, func() bool {
			n, err := rdb.HLen(context.Background(), prefix+"hot:dirty:"+node).Result()
			return err == nil && n == 0
		}, "%s still lists rooms once its changes are written", node)
	}
	parleytest.MustEdit(t, a.hot, r, ann, 2, "edited by A") // written
	a.setHold(t, true)
	parleytest.MustDelete(t, a.hot, r, ann, 3) // committed; A's write never comes
	a.hot.Await(context.Background(), a.hot.Mark())
	if n, err := rdb.HLen(context.Background(), prefix+"hot:dirty:node-a").Result(); err != nil || n != 1 {
		t.Fatalf("node-a lists %d rooms (%v) with its deletion unwritten, want 1", n, err)
	}
	if page := mustMessages(t, b.hot, r.ID, parley.Newest(10)); page[0].Body != "secret 3" {
		t.Fatalf("B's newest page before the recovery = %q first, want the stale text (the test's premise)", page[0].Body)
	}
	b.hot.RecoverGone([]string{"node-b"})
	wantTombstone(t, b.hotNode, b.hotNode, ann, r.ID, 3, true)
	if got := mustMessages(t, b.hot, r.ID, parley.Newest(10)); got[2].Body != "edited by B" {
		t.Errorf("B's newest page after the recovery: seq 1 = %q, want B's edit", got[2].Body)
	}
	if n, err := rdb.Exists(context.Background(), prefix+"hot:dirty:node-a").Result(); err != nil || n != 0 {
		t.Errorf("node-a's dirty rooms still stored after its recovery (%d, %v)", n, err)
	}
	if ok, err := rdb.SIsMember(context.Background(), prefix+"hot:dirty-nodes", "node-a").Result(); err != nil || ok {
		t.Errorf("node-a still listed with dirty rooms (%v, %v)", ok, err)
	}
}

// pausedLoad is a store whose next read of a room's last message
// (loadLast's Newest(1)) and next read of its window (Newest(20), the
// tests' RecentMessages), each once armed, take their snapshot and then
// wait for release before answering: loads of the hot data that read the
// store before something committed and write Redis after its own write.
type pausedLoad struct {
	parley.Store
	last, win       atomic.Bool
	gotLast, gotWin chan struct{} // closed when the armed read has its snapshot
	release         chan struct{} // closed by the test
}

// openPaused opens a node over a pausedLoad, with a user ann and her
// room r.
func openPaused(t *testing.T, rdb *goredis.Client, prefix string) (*pausedLoad, hotNode, parley.User, parley.Room) {
	t.Helper()
	p := &pausedLoad{gotLast: make(chan struct{}), gotWin: make(chan struct{}), release: make(chan struct{})}
	n := openNodeOver(t, pgtest.Schema(t), rdb, redis.HotConfig{Prefix: prefix, RecentMessages: 20}, nil,
		func(pg *postgres.Store) parley.Store { p.Store = pg; return p })
	ann := parleytest.MustCreateUser(t, n.hot, "ann")
	return p, n, ann, parleytest.MustCreateRoom(t, n.hot, ann, "r", 0)
}

func (p *pausedLoad) Messages(ctx context.Context, roomID string, page parley.Page) ([]parley.Message, error) {
	msgs, err := p.Store.Messages(ctx, roomID, page)
	if page == parley.Newest(1) && p.last.CompareAndSwap(true, false) {
		close(p.gotLast)
		<-p.release
	}
	if page == parley.Newest(20) && p.win.CompareAndSwap(true, false) {
		close(p.gotWin)
		<-p.release
	}
	return msgs, err
}

// TestHotStoreLoadBeforeForget: a load of a room's last message reads
// the store, a thread's root is deleted and its write drops the room's
// last message (a reply carrying the root's excerpt), then the load
// writes what it read. The load must not store the deleted root's text
// again (the same drop serves a stopped node's recovery: RecoverNode).
func TestHotStoreLoadBeforeForget(t *testing.T) {
	rdb, prefix := testClient(t)
	p, n, ann, r := openPaused(t, rdb, prefix)
	parleytest.MustSend(t, n.hot, r, ann, "root secret")
	parleytest.MustReply(t, n.hot, r, ann, 1, "a reply")
	parleytest.AllRooms(t, n.hot, ann, 10)
	if err := rdb.Del(context.Background(), prefix+"hot:l:"+r.ID).Err(); err != nil {
		t.Fatal(err)
	}
	p.last.Store(true)
	loaded := make(chan struct{})
	go func() {
		defer close(loaded)
		if _, err := n.hot.Room(context.Background(), r.ID); err != nil {
			t.Errorf("Room() error = %v", err)
		}
	}()
	<-p.gotLast
	parleytest.MustDelete(t, n.hot, r, ann, 1)
	close(p.release)
	<-loaded
	list := parleytest.AllRooms(t, n.hot, ann, 10)
	if len(list) != 1 || list[0].LastMessage == nil || list[0].LastMessage.ReplyTo == nil {
		t.Fatalf("room list = %+v, want the reply as the last message", list)
	}
	if ex := list[0].LastMessage.ReplyTo.Excerpt; strings.Contains(ex, "secret") {
		t.Errorf("last message's excerpt = %q after its root's deletion, want the deleted root's text gone", ex)
	}
}

// TestHotStoreRootDeleteOvertakesReply: node A's write of a reply, or of
// a change of one (a reaction, an edit), comes late, and node B deletes
// the reply's root meanwhile, dropping the room's last message and
// window. A's late write must not store the reply as the room's last
// message with the deleted root's text as its excerpt.
func TestHotStoreRootDeleteOvertakesReply(t *testing.T) {
	for _, late := range []string{"reply", "react", "edit"} {
		t.Run(late, func(t *testing.T) {
			a, b, ann, r := lateWorld(t)
			var reply parley.Message
			if late != "reply" {
				reply = parleytest.MustReply(t, b.hot, r, ann, 1, "a reply")
			}
			a.setHold(t, true)
			switch late {
			case "reply":
				reply = parleytest.MustReply(t, a.hot, r, ann, 1, "a reply")
			case "react":
				parleytest.MustReact(t, a.hot, r, ann, reply.Seq, "👍", true)
			case "edit":
				parleytest.MustEdit(t, a.hot, r, ann, reply.Seq, "a reply, edited")
			}
			parleytest.MustDelete(t, b.hot, r, ann, 1)
			a.setHold(t, false)
			for name, n := range map[string]hotNode{"A": a.hotNode, "B": b} {
				list := parleytest.AllRooms(t, n.hot, ann, 10)
				if len(list) != 1 || list[0].LastMessage == nil || list[0].LastMessage.Seq != reply.Seq || list[0].LastMessage.ReplyTo == nil {
					t.Fatalf("%s room list = %+v, want the reply as the last message", name, list)
				}
				if ex := list[0].LastMessage.ReplyTo.Excerpt; ex != "" {
					t.Errorf("%s last message's excerpt = %q, want none (its root is deleted)", name, ex)
				}
				if page := mustMessages(t, n.hot, r.ID, parley.Newest(10)); page[0].ReplyTo == nil || page[0].ReplyTo.Excerpt != "" {
					t.Errorf("%s newest page: the reply's reference = %+v, want no excerpt", name, page[0].ReplyTo)
				}
			}
		})
	}
}
