package redis_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"parley"
	"parley/parleytest"
	"parley/postgres/pgtest"
	"parley/redis"
	"parley/servicetest"
)

// privateClient starts a redis-server of the test's own (which it may
// pause) and returns it with a client whose calls end at their context's
// deadline, as cmd/parley dials them.
func privateClient(t *testing.T) (*servicetest.Redis, *goredis.Client) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a private redis-server")
	}
	srv := servicetest.StartRedis(t)
	return srv, deadlineClient(t, srv.URL())
}

// deadlineClient returns a client of url whose calls end at their
// context's deadline, closed at the end of the test (after what the test
// opens after it).
func deadlineClient(t testing.TB, url string) *goredis.Client {
	t.Helper()
	opt, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	opt.ContextTimeoutEnabled = true
	rdb := goredis.NewClient(opt)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// waitDone waits, at most d, for done to be closed.
func waitDone(done <-chan struct{}, d time.Duration) bool {
	select {
	case <-done:
		return true
	case <-time.After(d):
		return false
	}
}

// TestHotApplyDoesNotHoldWriters: while Redis does not answer, a commit
// of the node hands its events to the hot data and goes on, so that the
// other writers of the node (which PostgreSQL's sequencer orders behind
// the commit callbacks) do not wait for Redis; the writer through the hot
// store waits for its own write (read-your-writes), and once Redis is
// back every write is there.
func TestHotApplyDoesNotHoldWriters(t *testing.T) {
	srv, rdb := privateClient(t)
	applied := make(chan struct{}, 64) // a commit's callbacks returned
	// A Redis that does not answer holds a round trip this long.
	cfg := redis.HotConfig{Prefix: "parleytest:" + parley.NewID()[:8] + ":", RecentMessages: 20, Timeout: time.Minute}
	n := openNodeWith(t, pgtest.Schema(t), rdb, cfg, func([]parley.Event) {
		select {
		case applied <- struct{}{}:
		default:
		}
	})
	pg, hot := n.pg, n.hot
	ann := parleytest.MustCreateUser(t, hot, "ann")
	one := parleytest.MustCreateRoom(t, hot, ann, "one", 0)
	two := parleytest.MustCreateRoom(t, hot, ann, "two", 0)
	mustMessages(t, hot, one.ID, parley.Newest(10)) // warm the windows
	mustMessages(t, hot, two.ID, parley.Newest(10))
	for len(applied) > 0 {
		<-applied
	}

	srv.Freeze()
	defer srv.Thaw() // no-op once thawed below
	first := make(chan struct{})
	go func() {
		defer close(first)
		if _, _, err := hot.Send(context.Background(), parley.NewMessage{RoomID: one.ID, SenderID: ann.ID, SenderName: "ann", Body: "first"}); err != nil {
			t.Errorf("Send(first) error = %v", err)
		}
	}()
	select {
	case <-applied:
	case <-time.After(10 * time.Second):
		t.Fatal("the commit callbacks of a send did not return in 10 s while Redis does not answer: they wait for it")
	}
	second := make(chan struct{})
	go func() {
		defer close(second)
		if _, _, err := pg.Send(context.Background(), parley.NewMessage{RoomID: two.ID, SenderID: ann.ID, SenderName: "ann", Body: "second"}); err != nil {
			t.Errorf("Send(second) error = %v", err)
		}
	}()
	if !waitDone(second, 10*time.Second) {
		t.Fatal("a write of the node waited 10 s behind another commit's write to a Redis that does not answer")
	}
	select {
	case <-first:
		t.Error("Send returned before its commit was in Redis (Redis is frozen)")
	default:
	}
	srv.Thaw()
	if !waitDone(first, 30*time.Second) {
		t.Fatal("Send did not return 30 s after Redis came back")
	}
	wantSeqs(t, "room one", mustMessages(t, hot, one.ID, parley.Newest(10)), 1, 1)
	wantSeqs(t, "room two", mustMessages(t, hot, two.ID, parley.Newest(10)), 1, 1)
}

// TestHotAwaitEndsWhileRedisIsDown: while Redis does not answer, the
// wait for a commit (the relay's, before it publishes) ends after the
// write's timeout, with the failed invalidation kept for a retry, which
// succeeds once Redis is back.
func TestHotAwaitEndsWhileRedisIsDown(t *testing.T) {
	srv, rdb := privateClient(t)
	reg := prometheus.NewRegistry()
	n := openNodeWith(t, pgtest.Schema(t), rdb, redis.HotConfig{
		Prefix: "parleytest:" + parley.NewID()[:8] + ":", Timeout: 200 * time.Millisecond, Registerer: reg,
	}, nil)
	ann := parleytest.MustCreateUser(t, n.hot, "ann")
	bob := parleytest.MustCreateUser(t, n.hot, "bob")
	r := parleytest.MustCreateRoom(t, n.hot, ann, "room", 0)
	parleytest.MustRoom(t, n.hot, r.ID) // in Redis now: one member

	srv.Freeze()
	defer srv.Thaw() // no-op once thawed below

	if _, _, err := n.pg.Join(context.Background(), r.ID, bob.ID); err != nil { // the inner store: no wait
		t.Fatal(err)
	}
	mark := n.hot.Mark()
	done := make(chan struct{})
	go func() { defer close(done); n.hot.Await(context.Background(), mark) }()
	if !waitDone(done, 10*time.Second) {
		t.Fatal("Await of a commit did not end 10 s into a Redis outage (the write's timeout is 200 ms)")
	}
	srv.Thaw()
	if !parleytest.Poll(20*time.Second, func() bool { return retried(t, reg) >= 2 }) { // the room's and bob's invalidations
		t.Fatalf("the join's invalidations were not retried 20 s after Redis came back: %v", retried(t, reg))
	}
	if got := parleytest.MustRoom(t, n.hot, r.ID); got.MemberCount != 2 {
		t.Errorf("Room after the retried invalidation has %d members, want 2", got.MemberCount)
	}
}

// retried reads parley_hot_invalidation_retries_total.
func retried(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	return counter(t, reg, "parley_hot_invalidation_retries_total")
}

// counter reads a counter of reg (0 when it has none of that name).
func counter(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	return 0
}

// holdScripts holds every pipeline of scripts (the applier's writes)
// while armed, until released.
type holdScripts struct {
	armed   atomic.Bool
	release chan struct{}
	once    sync.Once
}

func (h *holdScripts) DialHook(next goredis.DialHook) goredis.DialHook          { return next }
func (h *holdScripts) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }
func (h *holdScripts) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if h.armed.Load() && slices.ContainsFunc(cmds, func(c goredis.Cmder) bool { return strings.HasPrefix(c.Name(), "eval") }) {
			<-h.release
		}
		return next(ctx, cmds)
	}
}

func (h *holdScripts) free() { h.once.Do(func() { close(h.release) }) }

// doneCalls is a context that frees the held writes when its Done is
// first asked for: a read that waits for them asks, and one that does
// not wait reads Redis before them.
type doneCalls struct {
	context.Context
	onDone func()
}

func (c doneCalls) Done() <-chan struct{} {
	c.onDone()
	return c.Context.Done()
}

// TestHotReadsWaitForLocalCommits: a commit of this node whose write to
// Redis is still on its way (the sessions of the node may have heard of
// it from the hub already) is in the node's reads from Redis: they wait
// for the writes queued when they began.
func TestHotReadsWaitForLocalCommits(t *testing.T) {
	rdb, prefix := testClient(t)
	hold := &holdScripts{release: make(chan struct{})}
	rdb.AddHook(hold)
	t.Cleanup(hold.free)
	n := openNode(t, pgtest.Schema(t), rdb, prefix, nil)
	ann := parleytest.MustCreateUser(t, n.hot, "ann")
	r := parleytest.MustCreateRoom(t, n.hot, ann, "room", 0)
	parleytest.MustSend(t, n.hot, r, ann, "one")
	mustMessages(t, n.hot, r.ID, parley.Newest(10)) // warm: Redis answers
	parleytest.AllRooms(t, n.hot, ann, 10)

	hold.armed.Store(true)
	if _, _, err := n.pg.Send(context.Background(), parley.NewMessage{RoomID: r.ID, SenderID: ann.ID, SenderName: "ann", Body: "two"}); err != nil {
		t.Fatal(err)
	}
	ctx := doneCalls{Context: context.Background(), onDone: hold.free}
	msgs, err := n.hot.Messages(ctx, r.ID, parley.Newest(10))
	if err != nil {
		t.Fatal(err)
	}
	wantSeqs(t, "newest page", msgs, 2, 1)

	hold.release, hold.once = make(chan struct{}), sync.Once{}
	if _, _, err := n.pg.Send(context.Background(), parley.NewMessage{RoomID: r.ID, SenderID: ann.ID, SenderName: "ann", Body: "three"}); err != nil {
		t.Fatal(err)
	}
	es, _, err := n.hot.Rooms(doneCalls{Context: context.Background(), onDone: hold.free}, ann.ID, "", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 1 || es[0].LastMessage == nil || es[0].LastMessage.Seq != 3 {
		t.Errorf("Rooms = %+v, want the room with last message seq 3", es)
	}
}

// TestHotMessageWriteRetried: messages and changes whose write to Redis
// failed are written again once Redis answers, although their room stays
// quiet: the newest page and the room list show them, and an edit
// committed while the writes failed is what they show (not the text it
// replaced). Before, the room's window and last message stayed behind,
// consistent with each other, until their TTL. The writes fail in the
// client (a pipeline lost on its way to Redis), which keeps its data.
func TestHotMessageWriteRetried(t *testing.T) {
	for _, tc := range []struct {
		name   string
		before []string // sent while Redis answers
		during []string // sent while the writes fail
		edit   int64    // a message edited while the writes fail (0: none)
		want   []string // the newest page's bodies afterwards, newest first
	}{
		{name: "sends", before: []string{"first"}, during: []string{"second", "third"}, want: []string{"third", "second", "first"}},
		{name: "sends and an edit", before: []string{"first"}, during: []string{"second", "third"}, edit: 3, want: []string{"edited", "second", "first"}},
		{name: "an edit", before: []string{"first", "second"}, edit: 1, want: []string{"second", "edited"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rdb, prefix := testClient(t)
			fail := &failScripts{}
			rdb.AddHook(fail)
			reg := prometheus.NewRegistry()
			n := openNodeWith(t, pgtest.Schema(t), rdb, redis.HotConfig{Prefix: prefix, Registerer: reg}, nil)
			ctx := context.Background()
			ann := parleytest.MustCreateUser(t, n.hot, "ann")
			r := parleytest.MustCreateRoom(t, n.hot, ann, "room", 0)
			for _, body := range tc.before {
				parleytest.MustSend(t, n.hot, r, ann, body)
			}
			wantSeqs(t, "before the failures", mustMessages(t, n.hot, r.ID, parley.Newest(10)), int64(len(tc.before)), 1) // the window is in Redis
			if rooms, _, err := n.hot.Rooms(ctx, ann.ID, "", 10); err != nil || len(rooms) != 1 {
				t.Fatalf("Rooms() = %v, %v", rooms, err)
			}

			fail.armed.Store(true)
			// The inner store's writes do not wait for Redis; Await returns
			// once the applier's write has failed.
			for _, body := range tc.during {
				if _, _, err := n.pg.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: ann.ID, SenderName: "ann", Body: body}); err != nil {
					t.Fatal(err)
				}
				n.hot.Await(ctx, n.hot.Mark())
			}
			if tc.edit > 0 {
				if _, err := n.pg.EditMessage(ctx, parley.Edit{RoomID: r.ID, Seq: tc.edit, EditorID: ann.ID, Body: "edited"}); err != nil {
					t.Fatal(err)
				}
				n.hot.Await(ctx, n.hot.Mark())
			}
			if fail.failed.Load() == 0 {
				t.Fatal("no write failed")
			}
			fail.armed.Store(false)

			top := int64(len(tc.before) + len(tc.during))
			deadline := time.Now().Add(20 * time.Second)
			for {
				page := mustMessages(t, n.hot, r.ID, parley.Newest(10))
				rooms, _, err := n.hot.Rooms(ctx, ann.ID, "", 10)
				if err != nil {
					t.Fatal(err)
				}
				var last *parley.Message
				if len(rooms) == 1 {
					last = rooms[0].LastMessage
				}
				if slices.Equal(bodies(page), tc.want) && last != nil && last.Seq == top && last.Body == tc.want[0] {
					wantSeqs(t, "after the failures", page, top, 1)
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("20 s after the writes failed the quiet room's newest page holds %q and its last message is %+v; want %q", bodies(page), last, tc.want)
				}
				time.Sleep(20 * time.Millisecond)
			}
			if got := counter(t, reg, "parley_hot_owed_replays_total"); got == 0 {
				t.Error("parley_hot_owed_replays_total = 0 after a replay")
			}
		})
	}
}

func bodies(msgs []parley.Message) []string {
	out := make([]string, len(msgs))
	for i := range msgs {
		out[i] = msgs[i].Body
	}
	return out
}

// failScripts fails every pipeline of scripts (the applier's writes)
// while armed, before it is sent.
type failScripts struct {
	armed  atomic.Bool
	failed atomic.Int64
}

func (f *failScripts) DialHook(next goredis.DialHook) goredis.DialHook          { return next }
func (f *failScripts) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook { return next }
func (f *failScripts) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if f.armed.Load() && slices.ContainsFunc(cmds, func(c goredis.Cmder) bool { return strings.HasPrefix(c.Name(), "eval") }) {
			f.failed.Add(1)
			err := errors.New("injected: the pipeline never reached Redis")
			for _, c := range cmds {
				c.SetErr(err)
			}
			return err
		}
		return next(ctx, cmds)
	}
}
