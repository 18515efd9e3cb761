package redis_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
	"parley/redis"

	"github.com/prometheus/client_golang/prometheus"
)

// The last message "l:{room}" dropped (here by a thread root's edit or
// deletion) comes back only from a load: a late write of an older
// version of a message, or of a change of it, must not create it
// (scriptLast, scriptLastChange).

// rootWorld: a room whose seq 1 is a thread root and seq 2 a reply to
// it, warm on both nodes (A's writes can be held back).
func rootWorld(t *testing.T) (a *heldNode, b hotNode, ann parley.User, r parley.Room) {
	return warmWorld(t, func(s parley.Store, r parley.Room, ann parley.User) {
		parleytest.MustSend(t, s, r, ann, "root")
		parleytest.MustReply(t, s, r, ann, 1, "reply")
	})
}

// wantLastAsStored checks that both nodes' room lists and room info show
// room r's last message as PostgreSQL holds it.
func wantLastAsStored(t *testing.T, a, b hotNode, ann parley.User, r parley.Room) {
	t.Helper()
	want, err := b.pg.Messages(context.Background(), r.ID, parley.Newest(1))
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range map[string]hotNode{"A": a, "B": b} {
		var lm *parley.Message
		for _, e := range parleytest.AllRooms(t, n.hot, ann, 10) {
			if e.Room.ID == r.ID {
				lm = e.LastMessage
			}
		}
		if lm.Seq != want[0].Seq || lm.Body != want[0].Body || (lm.DeletedAt == nil) != (want[0].DeletedAt == nil) || lm.Change != want[0].Change {
			t.Errorf("%s room list's last message = seq %d %q deleted %v change %d; PostgreSQL: seq %d %q deleted %v change %d",
				name, lm.Seq, lm.Body, lm.DeletedAt != nil, lm.Change, want[0].Seq, want[0].Body, want[0].DeletedAt != nil, want[0].Change)
		}
		room := parleytest.MustRoom(t, n.hot, r.ID)
		if room.LastSeq != want[0].Seq {
			t.Errorf("%s Room last_seq = %d, want %d", name, room.LastSeq, want[0].Seq)
		}
	}
}

// TestHotLastLateAfterRootEdit: A's write of message 3 (its send, a
// reaction to it, an edit of it) is late; B deletes the message, then
// edits the thread root (seq 1), which drops the room's last message.
// A's late write must not store "secret" as the room's last message (it
// did: deleted text on every node).
func TestHotLastLateAfterRootEdit(t *testing.T) {
	for _, late := range []string{"send", "react", "edit"} {
		t.Run(late, func(t *testing.T) {
			a, b, ann, r := rootWorld(t)
			var m3 parley.Message
			if late != "send" {
				m3 = parleytest.MustSend(t, a.hot, r, ann, "first")
			}
			a.setHold(t, true)
			switch late {
			case "send":
				m3 = parleytest.MustSend(t, a.hot, r, ann, "secret")
			case "react":
				parleytest.MustReact(t, a.hot, r, ann, m3.Seq, "👍", true)
			case "edit":
				parleytest.MustEdit(t, a.hot, r, ann, m3.Seq, "secret")
			}
			parleytest.MustDelete(t, b.hot, r, ann, m3.Seq)
			parleytest.MustEdit(t, b.hot, r, ann, 1, "root edited")
			a.setHold(t, false)
			wantLastAsStored(t, a.hotNode, b, ann, r)
		})
	}
}

// TestHotLastLateReplyReactionAfterRootDelete: the reply (seq 2) is the
// room's last message; A's reaction to it is late, and B deletes the
// thread's root meanwhile (which drops the last message). A's late
// reaction must not store the reply as the last message with the
// deleted root's text as its excerpt.
func TestHotLastLateReplyReactionAfterRootDelete(t *testing.T) {
	a, b, ann, r := rootWorld(t) // seq 1 "root", seq 2 replies to it
	parleytest.MustEdit(t, a.hot, r, ann, 1, "root secret")
	for _, n := range []hotNode{a.hotNode, b} {
		parleytest.AllRooms(t, n.hot, ann, 10)
	}
	a.setHold(t, true)
	parleytest.MustReact(t, a.hot, r, ann, 2, "👍", true)
	parleytest.MustDelete(t, b.hot, r, ann, 1)
	a.setHold(t, false)
	want, _ := b.pg.Messages(context.Background(), r.ID, parley.Newest(1))
	for name, n := range map[string]hotNode{"A": a.hotNode, "B": b} {
		lm := parleytest.AllRooms(t, n.hot, ann, 10)[0].LastMessage
		if lm.ReplyTo == nil || lm.ReplyTo.Excerpt != want[0].ReplyTo.Excerpt {
			t.Errorf("%s room list's last message: reply_to = %+v; PostgreSQL: %+v", name, lm.ReplyTo, want[0].ReplyTo)
		}
		page := mustMessages(t, n.hot, r.ID, parley.Newest(10))
		if page[0].ReplyTo == nil || page[0].ReplyTo.Excerpt != want[0].ReplyTo.Excerpt {
			t.Errorf("%s newest page: reply_to = %+v; PostgreSQL: %+v", name, page[0].ReplyTo, want[0].ReplyTo)
		}
	}
}

// TestHotLastOwedSendAfterRootEdit: the same without a held node: A's
// Redis write of its send "secret" fails (owed), B deletes the message
// and then edits the thread root (dropping the last message); A's next
// write (in another room) replays what it owes, which must not store
// "secret" as the room's last message.
func TestHotLastOwedSendAfterRootEdit(t *testing.T) {
	rdb, prefix := testClient(t)
	rdbA, err := redis.NewClient(os.Getenv("PARLEY_TEST_REDIS"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rdbA.Close() })
	fail := &failScripts{}
	rdbA.AddHook(fail)
	dbURL := pgtest.Schema(t)
	a := openNodeWith(t, dbURL, rdbA, redis.HotConfig{Prefix: prefix, RecentMessages: 20}, nil)
	b := openNode(t, dbURL, rdb, prefix, nil)
	ann := parleytest.MustCreateUser(t, a.hot, "ann")
	r := parleytest.MustCreateRoom(t, a.hot, ann, "r", 0)
	other := parleytest.MustCreateRoom(t, a.hot, ann, "other", 0)
	parleytest.MustSend(t, a.hot, r, ann, "root")
	parleytest.MustReply(t, a.hot, r, ann, 1, "reply")
	for _, n := range []hotNode{a, b} {
		mustMessages(t, n.hot, r.ID, parley.Newest(10))
		parleytest.AllRooms(t, n.hot, ann, 10)
	}
	fail.armed.Store(true)
	m3 := parleytest.MustSend(t, a.hot, r, ann, "secret") // committed; its Redis write fails: owed
	fail.armed.Store(false)
	parleytest.MustDelete(t, b.hot, r, ann, m3.Seq)
	parleytest.MustEdit(t, b.hot, r, ann, 1, "root edited")
	parleytest.MustSend(t, a.hot, other, ann, "next write") // replays what A owes
	wantLastAsStored(t, a, b, ann, r)
}

// TestHotLastLoadedWithWindow: in a room whose last message is not in
// Redis (a new room nobody listed yet, or after a drop), only a load
// creates it; a newest page read by itself, with no room list read, must
// load it with the window, or every later page would miss (a window read
// checks its top against the last message).
func TestHotLastLoadedWithWindow(t *testing.T) {
	rdb, prefix := testClient(t)
	reg := prometheus.NewRegistry()
	n := openNodeWith(t, pgtest.Schema(t), rdb, redis.HotConfig{Prefix: prefix, RecentMessages: 20, Registerer: reg}, nil)
	ann := parleytest.MustCreateUser(t, n.hot, "ann")
	r := parleytest.MustCreateRoom(t, n.hot, ann, "r", 0)
	for i := range 3 {
		parleytest.MustSend(t, n.hot, r, ann, fmt.Sprint("m", i+1))
	}
	for range 3 {
		wantSeqs(t, "newest page", mustMessages(t, n.hot, r.ID, parley.Newest(10)), 3, 1)
	}
	if hit, miss := hotRequests(t, reg, "messages", "hit"), hotRequests(t, reg, "messages", "miss"); hit != 2 || miss != 1 {
		t.Errorf("newest pages: %v hits, %v misses; want 2, 1", hit, miss)
	}
	parleytest.MustSend(t, n.hot, r, ann, "m4")
	wantSeqs(t, "newest page after a send", mustMessages(t, n.hot, r.ID, parley.Newest(10)), 4, 1)
	if hit := hotRequests(t, reg, "messages", "hit"); hit != 3 {
		t.Errorf("the page after a send: %v hits in all, want 3", hit)
	}
}

// TestHotLastSendDuringLoad: l: is absent (TTL, or any drop); a load
// of the last message reads PostgreSQL (seq 1), a send (seq 2) commits
// and is written to Redis (finding no l:, it stores nothing), then the
// load would store seq 1. The room list must show seq 2: the send moves
// the window's generation, so the load stores nothing.
func TestHotLastSendDuringLoad(t *testing.T) {
	rdb, prefix := testClient(t)
	p, n, ann, r := openPaused(t, rdb, prefix)
	parleytest.MustSend(t, n.hot, r, ann, "one")
	parleytest.AllRooms(t, n.hot, ann, 10)
	if err := rdb.Del(context.Background(), prefix+"hot:l:"+r.ID).Err(); err != nil { // its TTL ran out
		t.Fatal(err)
	}
	p.last.Store(true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		parleytest.AllRooms(t, n.hot, ann, 10)
	}()
	<-p.gotLast
	parleytest.MustSend(t, n.hot, r, ann, "two") // returns once written to Redis
	close(p.release)
	<-done
	lm := parleytest.AllRooms(t, n.hot, ann, 10)[0].LastMessage
	if lm == nil || lm.Seq != 2 {
		t.Errorf("room list's last message = %+v, want seq 2 %q", lm, "two")
	}
	if room := parleytest.MustRoom(t, n.hot, r.ID); room.LastSeq != 2 {
		t.Errorf("Room().LastSeq = %d, want 2", room.LastSeq)
	}
}

// TestHotLastSendDuringLoads: a thread root's edit drops l: and w:;
// a room-list read and a newest-page read both load from PostgreSQL
// (seq 3 the newest), a send (seq 4) is written meanwhile, then both
// loads would store. The newest page must hold seq 4 ("never a wrong
// page").
func TestHotLastSendDuringLoads(t *testing.T) {
	rdb, prefix := testClient(t)
	p, n, ann, r := openPaused(t, rdb, prefix)
	parleytest.MustSend(t, n.hot, r, ann, "root")
	parleytest.MustReply(t, n.hot, r, ann, 1, "reply")
	parleytest.MustSend(t, n.hot, r, ann, "three")
	parleytest.AllRooms(t, n.hot, ann, 10)
	mustMessages(t, n.hot, r.ID, parley.Newest(10))
	parleytest.MustEdit(t, n.hot, r, ann, 1, "root edited") // drops w: and l:
	p.last.Store(true)
	p.win.Store(true)
	done := make(chan struct{}, 2)
	go func() { parleytest.AllRooms(t, n.hot, ann, 10); done <- struct{}{} }()
	go func() { mustMessages(t, n.hot, r.ID, parley.Newest(10)); done <- struct{}{} }()
	<-p.gotLast
	<-p.gotWin
	parleytest.MustSend(t, n.hot, r, ann, "four")
	close(p.release)
	<-done
	<-done
	page := mustMessages(t, n.hot, r.ID, parley.Newest(10))
	var seqs []int64
	for _, m := range page {
		seqs = append(seqs, m.Seq)
	}
	if page[0].Seq != 4 {
		t.Errorf("newest page seqs = %v, want 4 first (PostgreSQL holds seq 4)", seqs)
	}
	if one := mustMessages(t, n.hot, r.ID, parley.Newest(1)); one[0].Seq != 4 {
		t.Errorf("Newest(1) = seq %d, want 4 (gateway checkSince would refuse since-seq 4)", one[0].Seq)
	}
	if lm := parleytest.AllRooms(t, n.hot, ann, 10)[0].LastMessage; lm.Seq != 4 {
		t.Errorf("room list's last message seq = %d, want 4", lm.Seq)
	}
}

// TestHotLastComesBackUnderSends: the last message is dropped in a room
// whose sends come faster than a load's round trips (the store's reads
// slowed here). Every load raced a send; a send that found the key gone
// refused them all, so the room list read the store on every call for
// seconds. A send's message is kept aside instead, and the load stores
// the newer of its snapshot and it, and a load whose two reads straddle a
// send stores the second's: the key comes back with the first load.
func TestHotLastComesBackUnderSends(t *testing.T) {
	rdb, prefix := testClient(t)
	reg := prometheus.NewRegistry()
	slow := &slowMessages{}
	n := openNodeOver(t, pgtest.Schema(t), rdb, redis.HotConfig{Prefix: prefix, RecentMessages: 20, Registerer: reg}, nil,
		func(pg *postgres.Store) parley.Store { slow.Store = pg; return slow })
	ann := parleytest.MustCreateUser(t, n.hot, "ann")
	r := parleytest.MustCreateRoom(t, n.hot, ann, "r", 0)
	parleytest.MustSend(t, n.hot, r, ann, "first")
	parleytest.AllRooms(t, n.hot, ann, 10)
	stop := make(chan struct{})
	sent := make(chan struct{})
	go func() { // sends back to back, each returning once written
		defer close(sent)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, _, err := n.hot.Send(context.Background(), parley.NewMessage{RoomID: r.ID, SenderID: ann.ID, SenderName: "ann", Body: fmt.Sprint(i)}); err != nil {
				t.Error(err)
				return
			}
		}
	}()
	defer func() { close(stop); <-sent }()
	slow.delay.Store(int64(5 * time.Millisecond))
	if err := rdb.Del(context.Background(), prefix+"hot:l:"+r.ID).Err(); err != nil {
		t.Fatal(err)
	}
	before := hotRequests(t, reg, "last", "miss")
	for range 10 {
		parleytest.AllRooms(t, n.hot, ann, 10)
	}
	misses := hotRequests(t, reg, "last", "miss") - before
	if misses != 1 {
		t.Errorf("%v of 10 room lists missed the last message while sends went on, want the first only", misses)
	}
	t.Logf("%v of 10 room lists missed the last message", misses)
}

// slowMessages is a store whose message reads take delay (ns) longer.
type slowMessages struct {
	parley.Store
	delay atomic.Int64
}

func (s *slowMessages) Messages(ctx context.Context, roomID string, page parley.Page) ([]parley.Message, error) {
	time.Sleep(time.Duration(s.delay.Load()))
	return s.Store.Messages(ctx, roomID, page)
}
