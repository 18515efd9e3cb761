package hub

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
)

// room is a fake store of one room's messages that reports its commits to a
// hub, the way the store's OnCommit sink does.
type room struct {
	mu      sync.Mutex
	id      string
	msgs    []parley.Message
	members []string
	sink    parley.EventSink
}

func (r *room) Members(ctx context.Context, roomID string) ([]string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if roomID != r.id {
		return nil, parley.Errorf(parley.CodeNotFound, "no room")
	}
	return append([]string(nil), r.members...), nil
}

// send commits a message and calls the sink under the lock, in commit order.
func (r *room) send(body string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := parley.Message{ID: parley.NewID(), RoomID: r.id, Seq: int64(len(r.msgs) + 1), Body: body}
	r.msgs = append(r.msgs, m)
	r.sink([]parley.Event{{Kind: parley.EventMessage, Message: m, Room: parley.Room{ID: r.id}}})
}

func (r *room) leave(user string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sink([]parley.Event{{Kind: parley.EventLeave, UserID: user, Room: parley.Room{ID: r.id}}})
}

// history reads pages of at most 3 messages, to exercise paging.
func (r *room) history(ctx context.Context, after int64) ([]parley.Message, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var page []parley.Message
	for _, m := range r.msgs {
		if m.Seq > after && len(page) < 3 {
			page = append(page, m)
		}
	}
	return page, nil
}

// recorder is a Receiver that records the seqs it gets.
type recorder struct {
	mu     sync.Mutex
	seqs   []int64
	lagged bool
	got    chan struct{}
}

func newRecorder() *recorder { return &recorder{got: make(chan struct{}, 1<<16)} }

func (r *recorder) Deliver(ms []*Message) {
	r.mu.Lock()
	for _, m := range ms {
		r.seqs = append(r.seqs, m.Seq)
	}
	r.mu.Unlock()
	r.got <- struct{}{}
}

func (r *recorder) Lagged() {
	r.mu.Lock()
	r.lagged = true
	r.mu.Unlock()
	r.got <- struct{}{}
}

// await waits until done, called with r.mu held, reports true; want
// names what was awaited in the failure.
func (r *recorder) await(t *testing.T, want string, done func() bool) {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		r.mu.Lock()
		ok := done()
		seqs, lagged := slices.Clone(r.seqs), r.lagged
		r.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-r.got:
		case <-timeout:
			t.Fatalf("got %v (lagged %v), want %s", seqs, lagged, want)
		}
	}
}

// waitLagged waits until r has been told it lagged.
func (r *recorder) waitLagged(t *testing.T) {
	t.Helper()
	r.await(t, "a lag notice", func() bool { return r.lagged })
}

// waitFor waits until r has n seqs and returns them.
func (r *recorder) waitFor(t *testing.T, n int) []int64 {
	t.Helper()
	r.await(t, fmt.Sprint(n, " messages"), func() bool { return len(r.seqs) >= n })
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seqs)
}

func newTestHub(t *testing.T, cfg Config) (*Hub, *room) {
	r := &room{id: "r1", members: []string{"alice", "bob"}}
	cfg.Members = r
	h := New(cfg)
	r.sink = h.Apply
	t.Cleanup(func() { h.Close() })
	return h, r
}

func directSend(s *Sub) Send {
	return func(ctx context.Context, m *Message) error { s.To.Deliver([]*Message{m}); return nil }
}

func checkSeqs(t *testing.T, got []int64, from, to int64) {
	t.Helper()
	if len(got) != int(to-from+1) {
		t.Fatalf("got %d messages %v, want seqs %d to %d", len(got), got, from, to)
	}
	for i, s := range got {
		if s != from+int64(i) {
			t.Fatalf("message %d has seq %d, want %d (all: %v)", i, s, from+int64(i), got)
		}
	}
}

func TestFanOutToRoomAndPersonalQueues(t *testing.T) {
	h, r := newTestHub(t, Config{})
	topic, queue, outsider := newRecorder(), newRecorder(), newRecorder()
	subs := []*Sub{
		{To: topic, UserID: "alice", RoomID: "r1"},
		{To: queue, UserID: "bob"},
		{To: outsider, UserID: "carol"},
	}
	for _, s := range subs {
		h.Subscribe(s)
		if err := h.Start(context.Background(), s, -1, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	for range 5 {
		r.send("hi")
	}
	checkSeqs(t, topic.waitFor(t, 5), 1, 5)
	checkSeqs(t, queue.waitFor(t, 5), 1, 5)
	h.Close()
	if len(outsider.seqs) != 0 {
		t.Errorf("a non-member's personal queue got %v", outsider.seqs)
	}
}

func TestLeaveDropsRoomSubscriptions(t *testing.T) {
	h, r := newTestHub(t, Config{})
	alice, bob := newRecorder(), newRecorder()
	as := &Sub{To: alice, UserID: "alice", RoomID: "r1"}
	bs := &Sub{To: bob, UserID: "bob", RoomID: "r1"}
	for _, s := range []*Sub{as, bs} {
		h.Subscribe(s)
		h.Start(context.Background(), s, -1, nil, nil)
	}
	r.send("one")
	r.leave("bob")
	r.send("two")
	checkSeqs(t, alice.waitFor(t, 2), 1, 2)
	h.Close()
	checkSeqs(t, bob.seqs, 1, 1)
	if !bs.Removed() || as.Removed() {
		t.Errorf("Removed() = alice %v, bob %v; want false, true", as.Removed(), bs.Removed())
	}
}

// TestResumeUnderConcurrentSends subscribes with since-seq while messages
// keep being committed, and checks that the subscriber sees every seq after
// the one it gave exactly once, in order.
func TestResumeUnderConcurrentSends(t *testing.T) {
	h, r := newTestHub(t, Config{})
	for range 20 {
		r.send("old")
	}
	const total = 500
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range total - 20 {
			r.send("new")
		}
	}()
	// All three start while the sender runs.
	recs := map[int64]*recorder{}
	for _, since := range []int64{0, 7, 19} {
		rec := newRecorder()
		s := &Sub{To: rec, UserID: "alice", RoomID: "r1"}
		h.Subscribe(s)
		if err := h.Start(context.Background(), s, since, r.history, directSend(s)); err != nil {
			t.Fatalf("Start(since %d): %v", since, err)
		}
		recs[since] = rec
	}
	<-done
	for since, rec := range recs {
		checkSeqs(t, rec.waitFor(t, int(total-since)), since+1, total)
	}
}

func TestCatchUpLag(t *testing.T) {
	h, r := newTestHub(t, Config{MaxBuffered: 2})
	for range 5 {
		r.send("old")
	}
	rec := newRecorder()
	s := &Sub{To: rec, UserID: "alice", RoomID: "r1"}
	h.Subscribe(s)
	// The history read blocks while three live messages arrive.
	stall := func(ctx context.Context, after int64) ([]parley.Message, error) {
		for range 3 {
			r.send("live")
		}
		parleytest.Poll(10*time.Second, s.Removed)
		return r.history(ctx, after)
	}
	err := h.Start(context.Background(), s, 0, stall, directSend(s))
	if !errors.Is(err, errRemoved) {
		t.Errorf("Start = %v, want errRemoved", err)
	}
	// The dispatcher marks s removed, then tells its receiver: Start may
	// return in between.
	rec.waitLagged(t)
}

// failingMembers fails every lookup, as a store that is down would.
type failingMembers struct{}

func (failingMembers) Members(ctx context.Context, roomID string) ([]string, error) {
	return nil, errors.New("store is down")
}

// TestMemberLookupFailureIsNotSilent checks that when the members of a room
// cannot be read, the personal queues that may have missed the message are
// dropped and told (Lagged), while room subscribers still get it.
func TestMemberLookupFailureIsNotSilent(t *testing.T) {
	h, r := newTestHub(t, Config{})
	h.members = failingMembers{}
	topic, queue := newRecorder(), newRecorder()
	ts := &Sub{To: topic, UserID: "alice", RoomID: "r1"}
	qs := &Sub{To: queue, UserID: "bob"}
	for _, s := range []*Sub{ts, qs} {
		h.Subscribe(s)
		if err := h.Start(context.Background(), s, -1, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	r.send("hi")
	checkSeqs(t, topic.waitFor(t, 1), 1, 1)
	h.Close()
	queue.mu.Lock()
	defer queue.mu.Unlock()
	if !queue.lagged || !qs.Removed() {
		t.Errorf("personal queue after a failed member lookup: lagged=%v removed=%v, want both true", queue.lagged, qs.Removed())
	}
}

// everyone is a Members that puts bob in every room.
type everyone struct{}

func (everyone) Members(ctx context.Context, roomID string) ([]string, error) {
	return []string{"bob"}, nil
}

// TestPersonalQueueAcrossRooms: a personal queue that held back messages
// of one room while it started still gets every message of the user's
// other rooms: seqs are per room, so none of theirs is a duplicate.
func TestPersonalQueueAcrossRooms(t *testing.T) {
	h := New(Config{Members: everyone{}})
	t.Cleanup(func() { h.Close() })
	personal := newRecorder()
	queue := &Sub{To: personal, UserID: "bob"}
	h.Subscribe(queue)
	probe := newRecorder() // a live subscription of room A: once it has a
	ps := &Sub{To: probe, UserID: "bob", RoomID: "A"}
	h.Subscribe(ps) // message, the queue has held it back too
	h.Start(context.Background(), ps, -1, nil, nil)
	msg := func(room string, seq int64) parley.Event {
		return parley.Event{Kind: parley.EventMessage, Room: parley.Room{ID: room, LastSeq: seq}, Message: parley.Message{RoomID: room, Seq: seq}}
	}
	var evs []parley.Event
	for seq := int64(1); seq <= 50; seq++ {
		evs = append(evs, msg("A", seq))
	}
	h.Apply(evs)
	probe.waitFor(t, 50)
	h.Start(context.Background(), queue, -1, nil, nil)
	personal.waitFor(t, 50)
	h.Apply([]parley.Event{msg("B", 1), msg("B", 2), msg("B", 3), msg("A", 51)})
	if got := personal.waitFor(t, 54); len(got) != 54 || !slices.Equal(got[50:], []int64{1, 2, 3, 51}) {
		t.Errorf("personal queue got %d messages ending %v, want 54 ending with room B's 1, 2, 3 and room A's 51", len(got), got[max(0, len(got)-4):])
	}
}

// TestRoomsPositions: Rooms reports, per room, the lowest and highest
// last seq of its topic subscriptions whose position is known, and
// leaves out those still catching up and the live-only ones that have
// had nothing yet.
func TestRoomsPositions(t *testing.T) {
	tests := []struct {
		name  string
		setup func(t *testing.T, h *Hub, r *room)
		want  map[string]Position
	}{
		{"since-seq start", func(t *testing.T, h *Hub, r *room) {
			for range 5 {
				r.send("old")
			}
			startSub(t, h, r, "alice", 2)
		}, map[string]Position{"r1": {5, 5}}},
		{"since-seq start in a room never written", func(t *testing.T, h *Hub, r *room) {
			startSub(t, h, r, "alice", 0)
		}, map[string]Position{"r1": {0, 0}}},
		{"live-only with nothing yet", func(t *testing.T, h *Hub, r *room) {
			r.send("old")
			dispatched(t, h) // else "old" may still reach alice, live
			startSub(t, h, r, "alice", -1)
		}, map[string]Position{}},
		{"live-only started at the room's last seq", func(t *testing.T, h *Hub, r *room) {
			for range 3 {
				r.send("old")
			}
			dispatched(t, h)
			s := &Sub{To: newRecorder(), UserID: "alice", RoomID: r.id}
			h.Subscribe(s)
			h.LiveAfter(s, 3)
			h.Start(context.Background(), s, -1, nil, nil)
		}, map[string]Position{"r1": {3, 3}}},
		{"live-only not started yet, at the room's last seq", func(t *testing.T, h *Hub, r *room) {
			s := &Sub{To: newRecorder(), UserID: "alice", RoomID: r.id}
			h.Subscribe(s)
			h.LiveAfter(s, 7)
		}, map[string]Position{"r1": {7, 7}}},
		{"live-only started in a room never written, and one started without its last seq", func(t *testing.T, h *Hub, r *room) {
			s := &Sub{To: newRecorder(), UserID: "alice", RoomID: r.id}
			h.Subscribe(s)
			h.LiveAfter(s, 0)
			h.Start(context.Background(), s, -1, nil, nil)
			startSub(t, h, r, "bob", -1)
		}, map[string]Position{"r1": {0, 0}}},
		{"live-only started at the last seq, then handed messages", func(t *testing.T, h *Hub, r *room) {
			rec := newRecorder()
			s := &Sub{To: rec, UserID: "alice", RoomID: r.id}
			h.Subscribe(s)
			h.LiveAfter(s, 0)
			h.Start(context.Background(), s, -1, nil, nil)
			r.send("one")
			r.send("two")
			rec.waitFor(t, 2)
		}, map[string]Position{"r1": {2, 2}}},
		{"live-only after live messages, and a since-seq start", func(t *testing.T, h *Hub, r *room) {
			rec := startSub(t, h, r, "alice", -1)
			r.send("one")
			r.send("two")
			rec.waitFor(t, 2)
			startSub(t, h, r, "bob", 0)
			h.Deliver(parley.Message{RoomID: "r1", Seq: 3}, nil) // both get it
			rec.waitFor(t, 3)
		}, map[string]Position{"r1": {3, 3}}},
		{"one still catching up, one personal queue", func(t *testing.T, h *Hub, r *room) {
			h.Subscribe(&Sub{To: newRecorder(), UserID: "alice", RoomID: "r1"}) // never started
			startSub(t, h, r, "bob", -1)
			q := &Sub{To: newRecorder(), UserID: "bob"}
			h.Subscribe(q)
			h.Start(context.Background(), q, -1, nil, nil)
		}, map[string]Position{}},
		{"lowest and highest", func(t *testing.T, h *Hub, r *room) {
			startSub(t, h, r, "alice", 0)
			// Two commits whose live delivery never came (lost between
			// nodes): bob reads them from history, alice has not had them.
			r.mu.Lock()
			for seq := int64(1); seq <= 2; seq++ {
				r.msgs = append(r.msgs, parley.Message{ID: parley.NewID(), RoomID: r.id, Seq: seq})
			}
			r.mu.Unlock()
			startSub(t, h, r, "bob", 0).waitFor(t, 2)
			h.Deliver(parley.Message{RoomID: "r2", Seq: 9}, nil) // no subscriber there
		}, map[string]Position{"r1": {0, 2}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, r := newTestHub(t, Config{})
			tc.setup(t, h, r)
			if got := h.Rooms(); !maps.Equal(got, tc.want) {
				t.Errorf("Rooms() = %v, want %v", got, tc.want)
			}
			want, wantOK := tc.want["r1"]
			if got, ok := h.Room("r1"); got != want || ok != wantOK {
				t.Errorf("Room(%q) = %v, %v, want %v, %v", "r1", got, ok, want, wantOK)
			}
		})
	}
}

// dispatched returns once h has dispatched every event applied before the
// call: the dispatcher takes events in the order they were queued, so a
// marker handed to a personal queue of its own (Deliver, after them) comes
// out after all of them. The marker's user and room are nobody else's.
func dispatched(t *testing.T, h *Hub) {
	t.Helper()
	rec := newRecorder()
	q := &Sub{To: rec, UserID: "dispatched-marker"}
	h.Subscribe(q)
	h.Start(context.Background(), q, -1, nil, nil)
	h.Deliver(parley.Message{RoomID: "dispatched-marker-room", Seq: 1}, []string{q.UserID})
	rec.waitFor(t, 1)
	h.Unsubscribe(q)
}

// startSub subscribes user to r's topic from since (-1: live only) and
// starts it.
func startSub(t *testing.T, h *Hub, r *room, user string, since int64) *recorder {
	t.Helper()
	rec := newRecorder()
	s := &Sub{To: rec, UserID: user, RoomID: r.id}
	h.Subscribe(s)
	if err := h.Start(context.Background(), s, since, r.history, directSend(s)); err != nil {
		t.Fatal(err)
	}
	return rec
}

// TestLiveSeqsDeduplicated: a room subscription is never handed a seq it
// had, live or from history: a cluster relay's fill from the store may
// bring again what the subscription already had.
func TestLiveSeqsDeduplicated(t *testing.T) {
	h, _ := newTestHub(t, Config{})
	rec := newRecorder()
	s := &Sub{To: rec, UserID: "alice", RoomID: "r1"}
	h.Subscribe(s)
	h.Start(context.Background(), s, -1, nil, nil)
	for _, seq := range []int64{1, 2, 3, 2, 3, 4} {
		h.Deliver(parley.Message{RoomID: "r1", Seq: seq}, nil)
	}
	checkSeqs(t, rec.waitFor(t, 4), 1, 4)
	h.Close()
	checkSeqs(t, rec.seqs, 1, 4)
}
