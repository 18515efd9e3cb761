package redis_test

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"parley"
	"parley/parleytest"
	"parley/postgres"
	"parley/postgres/pgtest"
	"parley/redis"
)

// hotNode is one node of a test cluster: its PostgreSQL store and the
// HotStore over it.
type hotNode struct {
	pg  *postgres.Store
	hot *redis.HotStore
}

// openNode opens a node on database dbURL and Redis prefix, passing its
// events on to sink (when not nil).
func openNode(t *testing.T, dbURL string, rdb *goredis.Client, prefix string, sink parley.EventSink) hotNode {
	t.Helper()
	return openNodeWith(t, dbURL, rdb, redis.HotConfig{Prefix: prefix, RecentMessages: 20}, sink)
}

// openNodeWith opens a node on database dbURL with cfg, passing its
// events on to sink (when not nil) after the hot data's Apply.
func openNodeWith(t testing.TB, dbURL string, rdb *goredis.Client, cfg redis.HotConfig, sink parley.EventSink) hotNode {
	t.Helper()
	return openNodeOver(t, dbURL, rdb, cfg, sink, nil)
}

// openNodeOver is openNodeWith with the HotStore over wrap(pg) instead of
// pg itself (when wrap is not nil): a store that counts its calls.
func openNodeOver(t testing.TB, dbURL string, rdb *goredis.Client, cfg redis.HotConfig, sink parley.EventSink, wrap func(*postgres.Store) parley.Store) hotNode {
	t.Helper()
	var hot *redis.HotStore
	ready := make(chan struct{})
	pg, err := postgres.Open(context.Background(), postgres.Config{URL: dbURL, OnCommit: func(evs []parley.Event) {
		<-ready
		hot.Apply(evs)
		if sink != nil {
			sink(evs)
		}
	}})
	if err != nil {
		t.Fatalf("postgres.Open() error = %v", err)
	}
	var inner parley.Store = pg
	if wrap != nil {
		inner = wrap(pg)
	}
	hot = redis.NewHotStore(inner, rdb, cfg)
	close(ready)
	t.Cleanup(func() { hot.Close() })
	return hotNode{pg: pg, hot: hot}
}

func TestHotStore(t *testing.T) {
	parleytest.RunStoreTests(t, func(t *testing.T, sink parley.EventSink) parley.Store {
		rdb, prefix := testClient(t)
		return openNode(t, pgtest.Schema(t), rdb, prefix, sink).hot
	})
}

// twoNodes opens two nodes over one database and one Redis prefix.
func twoNodes(t *testing.T) (a, b hotNode) {
	rdb, prefix := testClient(t)
	dbURL := pgtest.Schema(t)
	return openNode(t, dbURL, rdb, prefix, nil), openNode(t, dbURL, rdb, prefix, nil)
}

func mustMessages(t *testing.T, s parley.Store, room string, p parley.Page) []parley.Message {
	t.Helper()
	msgs, err := s.Messages(context.Background(), room, p)
	if err != nil {
		t.Fatalf("Messages(%s, %+v) error = %v", room, p, err)
	}
	return msgs
}

func seqs(msgs []parley.Message) []int64 {
	out := make([]int64, len(msgs))
	for i, m := range msgs {
		out[i] = m.Seq
	}
	return out
}

func wantSeqs(t *testing.T, what string, msgs []parley.Message, from, to int64) {
	t.Helper()
	got := seqs(msgs)
	var want []int64
	for s := from; s >= to; s-- {
		want = append(want, s)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s seqs = %v, want %v", what, got, want)
	}
}

// TestHotStoreTwoNodes: what is written through node A, including member
// counts going down, is read through node B, whose reads were warm.
func TestHotStoreTwoNodes(t *testing.T) {
	a, b := twoNodes(t)
	ann := parleytest.MustCreateUser(t, a.hot, "ann")
	bob := parleytest.MustCreateUser(t, a.hot, "bob")
	r1 := parleytest.MustCreateRoom(t, a.hot, ann, "one", 0)
	r2 := parleytest.MustCreateRoom(t, a.hot, ann, "two", 0)
	parleytest.MustJoin(t, b.hot, r1, bob)
	parleytest.MustJoin(t, b.hot, r2, bob)
	for i := range 5 {
		parleytest.MustSend(t, a.hot, r1, ann, fmt.Sprint("one ", i))
	}
	// Warm both nodes.
	for _, n := range []hotNode{a, b} {
		parleytest.AllRooms(t, n.hot, bob, 10)
		mustMessages(t, n.hot, r1.ID, parley.Newest(10))
		mustMessages(t, n.hot, r2.ID, parley.Newest(10))
	}

	last := parleytest.MustSend(t, a.hot, r2, ann, "two news")
	if got := parleytest.MustRoom(t, b.hot, r2.ID); got.LastSeq != 1 || got.MemberCount != 2 || !got.LastActivityAt.Equal(last.SentAt) {
		t.Errorf("B Room(two) = %+v, want last_seq 1, 2 members, activity %v", got, last.SentAt)
	}
	es := parleytest.AllRooms(t, b.hot, bob, 10)
	if len(es) != 2 || es[0].Room.ID != r2.ID || es[0].Unread != 1 || es[0].LastMessage == nil ||
		es[0].LastMessage.Body != "two news" || es[1].Room.ID != r1.ID || es[1].Unread != 5 {
		t.Errorf("B Rooms(bob) = %+v, want two (1 unread, last \"two news\"), then one (5 unread)", es)
	}
	wantSeqs(t, "B newest of one", mustMessages(t, b.hot, r1.ID, parley.Newest(3)), 5, 3)

	parleytest.MustSend(t, a.hot, r1, ann, "one more")
	wantSeqs(t, "B newest of one", mustMessages(t, b.hot, r1.ID, parley.Newest(10)), 6, 1)
	wantSeqs(t, "B page of one before 4", mustMessages(t, b.hot, r1.ID, parley.Page{Before: 4, After: -1, Limit: 2}), 3, 2)

	// Bob reads on B; A's list says so. Bob leaves two on A; B's count
	// goes down and B's list drops the room.
	if _, err := b.hot.MarkRead(context.Background(), r1.ID, bob.ID, 6); err != nil {
		t.Fatalf("MarkRead() error = %v", err)
	}
	es = parleytest.AllRooms(t, a.hot, bob, 1)
	if len(es) != 2 || es[0].Room.ID != r1.ID || es[0].Unread != 0 || es[1].Unread != 1 {
		t.Errorf("A Rooms(bob) = %+v, want one (0 unread), two (1 unread)", es)
	}
	// Memberships from Redis match PostgreSQL's, joined time included,
	// and follow a leave on the other node.
	want, err := a.pg.Member(context.Background(), r2.ID, bob.ID)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 { // a load, then a hit
		if got, err := b.hot.Member(context.Background(), r2.ID, bob.ID); err != nil || got != want {
			t.Errorf("B Member(two, bob) = %+v, %v; want %+v", got, err, want)
		}
	}
	if _, err := a.hot.Leave(context.Background(), r2.ID, bob.ID); err != nil {
		t.Fatalf("Leave() error = %v", err)
	}
	if _, err := b.hot.Member(context.Background(), r2.ID, bob.ID); parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("B Member(two, bob) after the leave on A: error = %v, want not_found", err)
	}
	if m, err := b.hot.Member(context.Background(), r1.ID, bob.ID); err != nil || m.ReadSeq != 6 {
		t.Errorf("B Member(one, bob) after the leave = %+v, %v; want read_seq 6", m, err)
	}
	if got := parleytest.MustRoom(t, b.hot, r2.ID); got.MemberCount != 1 {
		t.Errorf("B Room(two) after the leave = %+v, want 1 member", got)
	}
	if es = parleytest.AllRooms(t, b.hot, bob, 10); len(es) != 1 || es[0].Room.ID != r1.ID {
		t.Errorf("B Rooms(bob) after the leave = %+v, want only one", es)
	}
	if got := mustMessages(t, b.hot, r2.ID, parley.Page{Before: 1, After: -1, Limit: 5}); len(got) != 0 {
		t.Errorf("B page of two before 1 = %v, want none", seqs(got))
	}
	if _, err := b.hot.Messages(context.Background(), "nosuchroom", parley.Newest(5)); parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("Messages(unknown room) error = %v, want not_found", err)
	}
}

// TestHotStoreSteadyState: once warm, room lists, room info and newest
// pages reach PostgreSQL on neither node while messages flow through both.
func TestHotStoreSteadyState(t *testing.T) {
	a, b := twoNodes(t)
	users := parleytest.MustCreateUsers(t, a.hot, "u", 3)
	var rooms []parley.Room
	for i := range 4 {
		r := parleytest.MustCreateRoom(t, a.hot, users[0], fmt.Sprint("room ", i), 0)
		for _, u := range users[1:] {
			parleytest.MustJoin(t, b.hot, r, u)
		}
		rooms = append(rooms, r)
	}
	reads := func() {
		for _, n := range []hotNode{a, b} {
			for _, u := range users {
				parleytest.AllRooms(t, n.hot, u, 2)
			}
			for _, r := range rooms {
				parleytest.MustRoom(t, n.hot, r.ID)
				mustMessages(t, n.hot, r.ID, parley.Newest(10))
				for _, u := range users {
					if _, err := n.hot.Member(context.Background(), r.ID, u.ID); err != nil {
						t.Fatalf("Member(%s, %s) error = %v", r.ID, u.ID, err)
					}
				}
			}
		}
	}
	reads() // warm-up
	queries := func() uint64 { return a.pg.Queries() + b.pg.Queries() }
	// Accounts and tokens: after one read each, no more queries.
	tok := parley.Token{Hash: []byte("token-" + parley.NewID()), UserID: users[0].ID, CreatedAt: parley.Now(), ExpiresAt: parley.Now().Add(time.Hour)}
	if err := a.hot.CreateToken(context.Background(), tok); err != nil {
		t.Fatal(err)
	}
	for _, n := range []hotNode{a, b} { // warm-up
		if u, _, err := n.hot.TokenUser(context.Background(), tok.Hash, parley.Now()); err != nil || u.ID != users[0].ID {
			t.Fatalf("TokenUser() = %+v, %v; want %s", u, err, users[0].ID)
		}
		if u, err := n.hot.User(context.Background(), users[1].ID); err != nil || u != users[1] {
			t.Fatalf("User() = %+v, %v; want %+v", u, err, users[1])
		}
	}
	before := queries()
	for _, n := range []hotNode{a, b} {
		n.hot.TokenUser(context.Background(), tok.Hash, parley.Now())
		n.hot.User(context.Background(), users[1].ID)
	}
	if got := queries() - before; got != 0 {
		t.Errorf("warm TokenUser and User sent %d queries to PostgreSQL, want 0", got)
	}
	if _, _, err := a.hot.TokenUser(context.Background(), tok.Hash, tok.ExpiresAt.Add(time.Second)); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("TokenUser(after expiry) error = %v, want %s", err, parley.CodeUnauthorized)
	}
	for i := range 30 {
		n := []hotNode{a, b}[i%2]
		r := rooms[i%len(rooms)]
		m := parleytest.MustSend(t, n.hot, r, users[i%len(users)], fmt.Sprint("msg ", i))
		before := queries()
		reads()
		if got := queries() - before; got != 0 {
			t.Fatalf("after message %d: the reads sent %d statements to PostgreSQL, want 0", i, got)
		}
		page := mustMessages(t, []hotNode{b, a}[i%2].hot, r.ID, parley.Newest(1))
		if len(page) != 1 || page[0].ID != m.ID {
			t.Fatalf("after message %d: the other node's newest page = %v, want seq %d", i, seqs(page), m.Seq)
		}
	}
	es := parleytest.AllRooms(t, b.hot, users[1], 10)
	if len(es) != 4 || es[0].Room.ID != rooms[29%4].ID || es[0].LastMessage == nil || es[0].LastMessage.Body != "msg 29" {
		t.Errorf("Rooms(u1) = %+v, want 4 rooms, the newest %s with \"msg 29\"", es, rooms[29%4].ID)
	}
}

// TestHotStoreMetrics: a read that reaches PostgreSQL counts as a miss,
// one that Redis answers as a hit.
func TestHotStoreMetrics(t *testing.T) {
	rdb, prefix := testClient(t)
	pg, err := postgres.Open(context.Background(), postgres.Config{URL: pgtest.Schema(t)})
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	hot := redis.NewHotStore(pg, rdb, redis.HotConfig{Prefix: prefix, Registerer: reg})
	t.Cleanup(func() { hot.Close() })
	ann := parleytest.MustCreateUser(t, hot, "ann")
	r := parleytest.MustCreateRoom(t, hot, ann, "room", 0)
	count := func(kind, result string) float64 { return hotRequests(t, reg, kind, result) }
	for range 3 {
		if _, err := hot.Member(context.Background(), r.ID, ann.ID); err != nil {
			t.Fatal(err)
		}
		parleytest.MustRoom(t, hot, r.ID)
	}
	for _, c := range []struct {
		kind      string
		hit, miss float64
	}{{"member", 2, 1}, {"room", 2, 1}, {"last", 2, 1}} {
		if h, m := count(c.kind, "hit"), count(c.kind, "miss"); h != c.hit || m != c.miss {
			t.Errorf("%s: %v hits, %v misses; want %v, %v", c.kind, h, m, c.hit, c.miss)
		}
	}
}

// hotRequests returns parley_hot_requests_total{kind, result} in reg.
func hotRequests(t *testing.T, reg *prometheus.Registry, kind, result string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "parley_hot_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["kind"] == kind && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	t.Fatalf("parley_hot_requests_total{kind=%q,result=%q} is not registered", kind, result)
	return 0
}

// failingPipelines fails every pipeline while armed, as an unreachable
// Redis would; with writesOnly, only those that run a script (the
// applier's writes and their replays), as if writes were lost while reads
// work.
type failingPipelines struct {
	armed      atomic.Bool
	writesOnly bool
}

func (f *failingPipelines) DialHook(next goredis.DialHook) goredis.DialHook { return next }
func (f *failingPipelines) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return next
}
func (f *failingPipelines) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if f.armed.Load() && (!f.writesOnly || runsScript(cmds)) {
			return errors.New("redis is unreachable (test)")
		}
		return next(ctx, cmds)
	}
}

func runsScript(cmds []goredis.Cmder) bool {
	for _, c := range cmds {
		if name := c.Name(); name == "eval" || name == "evalsha" {
			return true
		}
	}
	return false
}

// TestHotStoreLostInvalidation: when the commit of a join or a leave cannot
// reach Redis, the joiner still passes the membership check (a negative is
// confirmed by PostgreSQL) and the leaver stops passing it once Redis is
// back (the invalidation is retried).
func TestHotStoreLostInvalidation(t *testing.T) {
	rdb, prefix := testClient(t)
	fail := &failingPipelines{}
	rdb.AddHook(fail)
	n := openNode(t, pgtest.Schema(t), rdb, prefix, nil)
	ann := parleytest.MustCreateUser(t, n.hot, "ann")
	bob := parleytest.MustCreateUser(t, n.hot, "bob")
	one := parleytest.MustCreateRoom(t, n.hot, ann, "one", 0)
	two := parleytest.MustCreateRoom(t, n.hot, ann, "two", 0)
	parleytest.MustJoin(t, n.hot, one, bob)
	if _, err := n.hot.Member(context.Background(), one.ID, bob.ID); err != nil { // warm bob's hash
		t.Fatal(err)
	}

	fail.armed.Store(true)
	parleytest.MustJoin(t, n.hot, two, bob)
	if _, err := n.hot.Leave(context.Background(), one.ID, bob.ID); err != nil {
		t.Fatal(err)
	}
	fail.armed.Store(false)

	if _, err := n.hot.Member(context.Background(), two.ID, bob.ID); err != nil {
		t.Errorf("Member(two) after a join whose invalidation was lost: %v, want a member", err)
	}
	var err error
	if !parleytest.Poll(10*time.Second, func() bool {
		_, err = n.hot.Member(context.Background(), one.ID, bob.ID)
		return parley.ErrorCode(err) == parley.CodeNotFound
	}) {
		t.Fatalf("Member(one) 10 s after a leave whose invalidation was lost: %v, want not_found", err)
	}
}

// TestHotStoreGapReadsFromStore: the cluster relay reads a gap as a
// forward page (seqs after the last it delivered). With the room's window
// in Redis consistent but behind its commits (their writes lost), that
// page still comes from PostgreSQL and brings the missing seqs: a relay
// never waits on a window that may never catch up.
func TestHotStoreGapReadsFromStore(t *testing.T) {
	rdb, prefix := testClient(t)
	fail := &failingPipelines{writesOnly: true}
	rdb.AddHook(fail)
	n := openNode(t, pgtest.Schema(t), rdb, prefix, nil)
	ann := parleytest.MustCreateUser(t, n.hot, "ann")
	r := parleytest.MustCreateRoom(t, n.hot, ann, "one", 0)
	for i := range 5 {
		parleytest.MustSend(t, n.hot, r, ann, fmt.Sprint(i))
	}
	wantSeqs(t, "newest page, warm", mustMessages(t, n.hot, r.ID, parley.Newest(10)), 5, 1)

	fail.armed.Store(true)
	for i := range 2 {
		parleytest.MustSend(t, n.hot, r, ann, fmt.Sprint("lost ", i))
	}
	got := mustMessages(t, n.hot, r.ID, parley.Page{After: 5, Limit: 2})
	if fmt.Sprint(seqs(got)) != "[6 7]" {
		t.Errorf("forward page after 5 with Redis behind at 5: seqs %v, want [6 7]", seqs(got))
	}
	got = mustMessages(t, n.hot, r.ID, parley.Page{After: 3, Limit: 10})
	if fmt.Sprint(seqs(got)) != "[4 5 6 7]" {
		t.Errorf("forward page after 3 with Redis behind at 5: seqs %v, want [4 5 6 7]", seqs(got))
	}
}
