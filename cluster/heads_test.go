package cluster_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley"
	"parley/cluster"
	"parley/hub"
	"parley/inmem"
	"parley/parleytest"
)

// memHeads is a cluster.Heads in memory, shared by the nodes of a test.
type memHeads struct {
	mu    sync.Mutex
	heads map[string]int64
}

func (h *memHeads) Advance(ctx context.Context, heads map[string]int64) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	for room, seq := range heads {
		if seq > h.heads[room] {
			h.heads[room] = seq
		}
	}
	return nil
}

func (h *memHeads) Heads(ctx context.Context, rooms []string) (map[string]int64, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	out := map[string]int64{}
	for _, room := range rooms {
		if seq, ok := h.heads[room]; ok {
			out[room] = seq
		}
	}
	return out, nil
}

func (h *memHeads) head(room string) int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.heads[room]
}

// droppingBroker loses every batch while drop is set, as a broker that
// never got them would (RabbitMQ down and the sender killed, routes lost
// with Redis).
type droppingBroker struct {
	parley.Broker
	drop      atomic.Bool
	published atomic.Int64 // Publish calls
}

func (b *droppingBroker) Publish(ctx context.Context, batch parley.Batch) error {
	b.published.Add(1)
	if b.drop.Load() {
		return nil
	}
	return b.Broker.Publish(ctx, batch)
}

// staticNodes lists fixed live nodes.
type staticNodes []string

func (n staticNodes) LiveNodes(context.Context) ([]string, error) { return n, nil }

// emptyPresence answers that nobody is anywhere while empty is set, as a
// Redis restarted without its data does until the heartbeats write the
// entries again, and fails while down is set.
type emptyPresence struct {
	parley.Presence
	empty, down atomic.Bool
}

func (p *emptyPresence) Nodes(ctx context.Context, userIDs []string) (map[string][]string, error) {
	if p.down.Load() {
		return nil, parley.Errorf(parley.CodeUnavailable, "presence down (test)")
	}
	if p.empty.Load() {
		return map[string][]string{}, nil
	}
	return p.Presence.Nodes(ctx, userIDs)
}

type headNode struct {
	relay    *cluster.Relay
	local    *fakeLocal
	broker   *droppingBroker
	presence *emptyPresence
	inner    *inmem.Presence
}

// newHeadNodes starts relays sharing heads, whose gap timers never fire
// (GapWait and HeadCheck are an hour): whatever a node delivers past a
// lost batch, it owes to a head check or a broadcast.
func newHeadNodes(t *testing.T, store *fakeStore, heads *memHeads, live []string) map[string]*headNode {
	return newHeadNodesWith(t, store, heads, live, nil)
}

// newHeadNodesWith is newHeadNodes with each node's Config changed by
// tweak first, when not nil.
func newHeadNodesWith(t *testing.T, store *fakeStore, heads *memHeads, live []string, tweak func(name string, cfg *cluster.Config)) map[string]*headNode {
	ex, reg := inmem.NewExchange(), inmem.NewRegistry()
	nodes := map[string]*headNode{}
	for _, name := range live {
		n := &headNode{local: &fakeLocal{got: map[string][]int64{}}}
		cfg := cluster.Config{Node: name, Store: store, Local: n.local, ApplyLeaves: n.local.applyLeaves, GapWait: time.Hour,
			Heads: heads, HeadCheck: time.Hour, Nodes: staticNodes(live), Settle: time.Hour}
		if tweak != nil {
			tweak(name, &cfg)
		}
		n.relay = cluster.New(cfg)
		n.broker = &droppingBroker{Broker: ex.Broker(inmem.BrokerConfig{Node: name, Handler: n.relay.Receive, Gone: n.relay.Gone})}
		n.inner = reg.Presence(inmem.PresenceConfig{Node: name, OnChange: n.relay.PresenceChanged})
		n.presence = &emptyPresence{Presence: n.inner}
		n.relay.Start(n.broker, n.presence)
		t.Cleanup(func() { n.relay.Close(); n.broker.Close(); n.inner.Close() })
		nodes[name] = n
	}
	return nodes
}

// TestHeadCheckFillsAQuietRoom: batches that were never sent (a's broker
// lost them) reach b's subscribers at b's next head check, with no later
// message in the room.
func TestHeadCheckFillsAQuietRoom(t *testing.T) {
	tests := []struct {
		name string
		lost int
	}{
		{"one lost", 1},
		{"ten lost", 10},
		{"pages lost", 3*parley.MaxPageLimit + 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store, heads, a, b := roomOnTwoNodes(t)

			a.broker.drop.Store(true)
			var evs []parley.Event
			for range tc.lost {
				evs = append(evs, store.commit("r", "x"))
			}
			a.relay.Apply(evs)
			last := int64(tc.lost + 1)
			waitHead(t, heads, "r", last) // a wrote its head
			if got := b.local.seqs("y"); len(got) != 1 {
				t.Fatalf("y on b got %v before the check, want only seq 1 (the batches were lost)", got)
			}

			b.relay.CheckHeads() // the fault healed: the broker reconnected
			if got := waitSeqs(t, b.local, "y", int(last)); !slices.Equal(got, wantSeqs(int(last))) {
				t.Errorf("y on b after a head check got %d seqs %v..., want 1..%d", len(got), got[:min(len(got), 5)], last)
			}
		})
	}
}

// roomOnTwoNodes is nodes a and b with room r of members x and y, y
// online on b, after x's first message on a has reached b.
func roomOnTwoNodes(t *testing.T) (*fakeStore, *memHeads, *headNode, *headNode) {
	t.Helper()
	store := &fakeStore{members: map[string][]string{"r": {"x", "y"}}, msgs: map[string][]parley.Message{}}
	heads := &memHeads{heads: map[string]int64{}}
	nodes := newHeadNodes(t, store, heads, []string{"a", "b"})
	a, b := nodes["a"], nodes["b"]
	b.inner.Add(context.Background(), "y")
	a.relay.Apply([]parley.Event{store.commit("r", "x")})
	waitSeqs(t, b.local, "y", 1)
	return store, heads, a, b
}

func waitHead(t *testing.T, heads *memHeads, room string, seq int64) {
	t.Helper()
	if !parleytest.Poll(5*time.Second, func() bool { return heads.head(room) >= seq }) {
		t.Fatalf("head of %s = %d, want %d", room, heads.head(room), seq)
	}
}

// TestUnknownRoutesReachEveryLiveNode: while presence is empty (Redis came
// back without its data) or down, a message goes to every live node
// rather than to none.
func TestUnknownRoutesReachEveryLiveNode(t *testing.T) {
	tests := []struct {
		name  string
		fault func(n *headNode)
	}{
		{"presence empty after a reset", func(n *headNode) {
			n.presence.empty.Store(true)
			n.relay.PresenceReset() // as the resubscription after the outage tells
		}},
		{"presence down", func(n *headNode) {
			n.presence.down.Store(true)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeStore{members: map[string][]string{"r": {"x", "y", "z"}}, msgs: map[string][]parley.Message{}}
			heads := &memHeads{heads: map[string]int64{}}
			nodes := newHeadNodes(t, store, heads, []string{"a", "b", "c"})
			nodes["b"].inner.Add(context.Background(), "y")
			nodes["c"].inner.Add(context.Background(), "z")
			a := nodes["a"]
			tc.fault(a)
			a.relay.Apply([]parley.Event{store.commit("r", "x")})
			a.relay.Apply([]parley.Event{store.commit("r", "x")})
			for _, u := range []struct{ node, user string }{{"b", "y"}, {"c", "z"}} {
				if got := waitSeqs(t, nodes[u.node].local, u.user, 2); !slices.Equal(got, wantSeqs(2)) {
					t.Errorf("%s on %s got %v, want 1..2", u.user, u.node, got)
				}
			}
		})
	}
}

// switchNodes lists the live nodes it holds now.
type switchNodes struct{ live atomic.Pointer[[]string] }

func (n *switchNodes) LiveNodes(context.Context) ([]string, error) { return *n.live.Load(), nil }

func (n *switchNodes) set(live ...string) { n.live.Store(&live) }

// signalHeads is one node's view of shared heads that tells each read.
type signalHeads struct {
	*memHeads
	reads chan struct{}
}

func (h *signalHeads) Heads(ctx context.Context, rooms []string) (map[string]int64, error) {
	defer func() {
		select {
		case h.reads <- struct{}{}:
		default:
		}
	}()
	return h.memHeads.Heads(ctx, rooms)
}

// TestEmptyLiveNodesForgetNobody: Redis came back empty, so the live
// nodes list nobody (not even this node, whose heartbeat has not run
// since): the known nodes are kept, and a message goes to every one of
// them while presence is empty, whether or not a reset was told before.
func TestEmptyLiveNodesForgetNobody(t *testing.T) {
	tests := []struct {
		name  string
		reset bool // the resubscription told the reset first
	}{
		{"reset told", true},
		{"reset not told yet", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store := &fakeStore{members: map[string][]string{"r": {"x", "y"}}, msgs: map[string][]parley.Message{}}
			heads := &memHeads{heads: map[string]int64{}}
			lister := &switchNodes{}
			lister.set("a", "b")
			aHeads := &signalHeads{memHeads: heads, reads: make(chan struct{}, 10)}
			nodes := newHeadNodesWith(t, store, heads, []string{"a", "b"}, func(name string, cfg *cluster.Config) {
				if name == "a" {
					cfg.Nodes, cfg.Heads = lister, aHeads
				}
			})
			a, b := nodes["a"], nodes["b"]
			b.inner.Add(context.Background(), "y")
			<-aHeads.reads // Start's check: a knows a and b

			lister.set() // Redis restarted empty
			a.presence.empty.Store(true)
			a.relay.CheckHeads()
			<-aHeads.reads // the live nodes were read again, and the heads
			if tc.reset {
				a.relay.PresenceReset()
			}
			a.relay.Apply([]parley.Event{store.commit("r", "x")})
			if got := waitSeqs(t, b.local, "y", 1); !slices.Equal(got, wantSeqs(1)) {
				t.Errorf("y on b got %v, want [1]", got)
			}
		})
	}
}

// resettingPresence is a presence whose reads find Redis empty and tell
// the reset hook before they return, as redis.Presence does while its
// epoch marker is missing: it answers from the inner presence, which may
// already hold some entries written again.
type resettingPresence struct {
	parley.Presence
	reset func()
}

func (p *resettingPresence) Nodes(ctx context.Context, userIDs []string) (map[string][]string, error) {
	p.reset()
	return p.Presence.Nodes(ctx, userIDs)
}

// TestRouteReadDuringResetNotCached: a route read while presence reports
// a reset may miss nodes whose entries are not back yet, so it is not
// cached: the next message reads presence again.
func TestRouteReadDuringResetNotCached(t *testing.T) {
	store := &fakeStore{members: map[string][]string{"r": {"x", "y"}}, msgs: map[string][]parley.Message{}}
	ex, reg := inmem.NewExchange(), inmem.NewRegistry()
	local := &fakeLocal{got: map[string][]int64{}}
	relay := cluster.New(cluster.Config{Node: "a", Store: store, Local: local, GapWait: time.Hour, Settle: time.Hour})
	broker := ex.Broker(inmem.BrokerConfig{Node: "a", Handler: relay.Receive, Gone: relay.Gone})
	inner := reg.Presence(inmem.PresenceConfig{Node: "a", OnChange: relay.PresenceChanged})
	t.Cleanup(func() { relay.Close(); broker.Close(); inner.Close() })
	inner.Add(context.Background(), "x") // a's entries are back, b's not yet
	relay.Start(broker, &resettingPresence{Presence: inner, reset: relay.PresenceReset})
	relay.Apply([]parley.Event{store.commit("r", "x")})
	waitSeqs(t, local, "x", 1)
	if got := relay.Nodes("r"); len(got) != 0 {
		t.Errorf("Nodes(%q) after a read during a reset = %v, want none cached", "r", got)
	}
}

// hubRooms is the wiring of cmd/parley: the hub's room positions as the
// relay's Subscribed.
type hubRooms struct{ h *hub.Hub }

func (s hubRooms) SubscribedRooms() map[string]cluster.Position {
	out := map[string]cluster.Position{}
	for room, p := range s.h.Rooms() {
		out[room] = cluster.Position{Low: p.Low, High: p.High}
	}
	return out
}

func (s hubRooms) SubscribedRoom(roomID string) (cluster.Position, bool) {
	p, ok := s.h.Room(roomID)
	return cluster.Position{Low: p.Low, High: p.High}, ok
}

// seqRecorder is a hub.Receiver that records its seqs.
type seqRecorder struct {
	mu   sync.Mutex
	seqs []int64
}

func (r *seqRecorder) Deliver(ms []*hub.Message) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range ms {
		r.seqs = append(r.seqs, m.Seq)
	}
}

func (r *seqRecorder) Lagged() {}

func (r *seqRecorder) get() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.seqs)
}

// wait waits until r has n seqs, and returns them.
func (r *seqRecorder) wait(t *testing.T, name string, n int) []int64 {
	t.Helper()
	var got []int64
	parleytest.Poll(5*time.Second, func() bool { got = r.get(); return len(got) >= n })
	return got
}

// TestHeadCheckFillsARoomNeverDelivered: a quiet room whose subscribers on
// b listened from the start, and whose first messages never reached b
// (a's presence was empty when a committed them): b's head check fills
// them from the store, from the lowest of its subscribers' positions, and
// every subscriber (topic subscriptions, wherever they are, and the
// personal queue) gets each message once.
func TestHeadCheckFillsARoomNeverDelivered(t *testing.T) {
	tests := []struct {
		name    string
		lost    int
		history int64 // a second topic subscriber read the history up to this seq
	}{
		{"ten lost", 10, 0},
		{"ten lost, one subscriber ahead", 10, 4},
		{"pages lost", 2*parley.MaxPageLimit + 3, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := newHubNodes(t, 0)
			store, heads, h, a, b := n.store, n.heads, n.hub, n.a, n.b
			b.inner.Add(context.Background(), "y")
			history := func(ctx context.Context, after int64) ([]parley.Message, error) {
				return store.Messages(ctx, "r", parley.Page{After: after, Limit: parley.MaxPageLimit})
			}
			topic, queue := &seqRecorder{}, &seqRecorder{}
			ts := &hub.Sub{To: topic, UserID: "y", RoomID: "r"}
			qs := &hub.Sub{To: queue, UserID: "y"}
			h.Subscribe(ts)
			send := func(ctx context.Context, m *hub.Message) error { ts.To.Deliver([]*hub.Message{m}); return nil }
			if err := h.Start(context.Background(), ts, 0, history, send); err != nil {
				t.Fatal(err)
			}
			h.Subscribe(qs)
			h.Start(context.Background(), qs, -1, nil, nil)

			a.broker.drop.Store(true) // routes read from an empty Redis: no batch for b
			var evs []parley.Event
			for range tc.lost {
				evs = append(evs, store.commit("r", "x"))
			}
			a.relay.Apply(evs)
			last := int64(tc.lost)
			waitHead(t, heads, "r", last)
			ahead := &seqRecorder{}
			if tc.history > 0 {
				as := &hub.Sub{To: ahead, UserID: "y", RoomID: "r"}
				h.Subscribe(as)
				hist := func(ctx context.Context, after int64) ([]parley.Message, error) {
					return store.Messages(ctx, "r", parley.Page{After: after, Limit: int(tc.history - after)})
				}
				asend := func(ctx context.Context, m *hub.Message) error { as.To.Deliver([]*hub.Message{m}); return nil }
				// Its history stops at tc.history, as if read then.
				if err := h.Start(context.Background(), as, 0, func(ctx context.Context, after int64) ([]parley.Message, error) {
					if after >= tc.history {
						return nil, nil
					}
					return hist(ctx, after)
				}, asend); err != nil {
					t.Fatal(err)
				}
			}
			if got := topic.get(); len(got) != 0 {
				t.Fatalf("topic on b got %v before the check, want nothing (the batches were lost)", got)
			}

			b.relay.CheckHeads()
			if got := topic.wait(t, "topic", int(last)); !slices.Equal(got, wantSeqs(int(last))) {
				t.Errorf("topic on b after a head check got %d seqs, want 1..%d once: %v", len(got), last, got[:min(len(got), 12)])
			}
			if got := queue.wait(t, "queue", int(last)); !slices.Equal(got, wantSeqs(int(last))) {
				t.Errorf("personal queue on b after a head check got %d seqs, want 1..%d once: %v", len(got), last, got[:min(len(got), 12)])
			}
			if tc.history > 0 {
				got := ahead.wait(t, "ahead", int(last))
				if want := wantSeqs(int(last)); !slices.Equal(got, want) {
					t.Errorf("topic ahead on b got %v, want 1..%d once", got[:min(len(got), 12)], last)
				}
			}
			// A second check finds nothing to do, and brings nothing twice.
			b.relay.CheckHeads()
			a.broker.drop.Store(false)
			a.relay.Apply([]parley.Event{store.commit("r", "x")})
			if got := queue.wait(t, "queue", int(last)+1); !slices.Equal(got, wantSeqs(int(last)+1)) {
				t.Errorf("personal queue on b after one more message got %d seqs, want 1..%d once", len(got), last+1)
			}
			if got := topic.get(); !slices.Equal(got, wantSeqs(int(last)+1)) {
				t.Errorf("topic on b after one more message got %d seqs, want 1..%d once", len(got), last+1)
			}
		})
	}
}

// TestNodeDeathFillsFromStore: a node killed right after its commits may
// never have written their heads (nor sent their batches), so when the
// others learn of its death they read their rooms from the store, not
// from Heads.
func TestNodeDeathFillsFromStore(t *testing.T) {
	tests := []struct {
		name string
		tell func(b *headNode)
	}{
		{"broker says gone", func(b *headNode) { b.relay.Gone("a") }},
		{"presence dropped a node", func(b *headNode) { b.relay.PresenceChanged("") }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			store, heads, _, b := roomOnTwoNodes(t)
			waitHead(t, heads, "r", 1)

			// a commits 10 more and dies before its relay hears of them:
			// no batch, no head.
			for range 10 {
				store.commit("r", "x")
			}
			b.relay.CheckHeads() // a check from Heads alone finds nothing to do
			tc.tell(b)
			if got := waitSeqs(t, b.local, "y", 11); !slices.Equal(got, wantSeqs(11)) {
				t.Errorf("y on b after a's death got %v, want 1..11", got)
			}
		})
	}
}

// TestUnseenRoomLateBatchReachesLiveSubscriber: b's live-only subscriber
// listens from a room's start (placed at its last seq, 0); a commits
// seq 1, whose batch does not reach b within GapWait (here: never), and b
// commits seq 2, the first message b sees of the room. Once seq 2 has
// waited GapWait, b starts the room where its subscriber is and reads
// seq 1 from the store: the subscriber gets 1 and 2, in order, where it
// got 2 alone before (CI's TestClusterRoomAcrossNodes: a node's sessions
// all short of the room's first seqs).
func TestUnseenRoomLateBatchReachesLiveSubscriber(t *testing.T) {
	n := newHubNodes(t, 5*time.Millisecond) // b's head check at Start is over: only the gap timer can fill
	store, h, a, b := n.store, n.hub, n.a, n.b
	b.inner.Add(context.Background(), "y")
	topic := &seqRecorder{}
	ts := &hub.Sub{To: topic, UserID: "y", RoomID: "r"}
	h.Subscribe(ts)
	h.LiveAfter(ts, 0) // the room's last seq when y subscribed
	h.Start(context.Background(), ts, -1, nil, nil)

	a.broker.drop.Store(true) // seq 1's batch is later than GapWait
	a.relay.Apply([]parley.Event{store.commit("r", "x")})
	b.relay.Apply([]parley.Event{store.commit("r", "y")})
	if got := topic.wait(t, "topic", 2); !slices.Equal(got, wantSeqs(2)) {
		t.Errorf("live-only topic on b, seq 1's batch late and seq 2 committed on b: got %v, want [1 2]", got)
	}
}

// hubNodes are nodes a and b sharing heads and a store of room "r" (members
// x and y), b delivering to a real hub whose positions are its Subscribed.
type hubNodes struct {
	store *fakeStore
	heads *memHeads
	hub   *hub.Hub
	a, b  *headNode
}

// newHubNodes starts hubNodes, b with GapWait gapWait (0: an hour, as
// newHeadNodes), once b's head check at Start is over.
func newHubNodes(t *testing.T, gapWait time.Duration) hubNodes {
	store := &fakeStore{members: map[string][]string{"r": {"x", "y"}}, msgs: map[string][]parley.Message{}}
	heads := &memHeads{heads: map[string]int64{}}
	h := hub.New(hub.Config{Members: store})
	t.Cleanup(func() { h.Close() })
	bHeads := &signalHeads{memHeads: heads, reads: make(chan struct{}, 10)}
	nodes := newHeadNodesWith(t, store, heads, []string{"a", "b"}, func(name string, cfg *cluster.Config) {
		if name == "b" {
			cfg.Local, cfg.Subscribed, cfg.Heads = h, hubRooms{h}, bHeads
			if gapWait > 0 {
				cfg.GapWait = gapWait
			}
		}
	})
	<-bHeads.reads
	return hubNodes{store: store, heads: heads, hub: h, a: nodes["a"], b: nodes["b"]}
}

// TestOnLiveNodes: each listing of the live nodes that names this node
// reaches Config.OnLiveNodes (the hot data's recovery of a stopped
// node's rooms), from the keeper; one that does not (Redis came back
// empty) proves nothing and does not, nor does any listing while routes
// are unsure after it (within Settle: the other nodes may not have
// written their entries again).
func TestOnLiveNodes(t *testing.T) {
	store := &fakeStore{members: map[string][]string{"r": {"x"}}, msgs: map[string][]parley.Message{}}
	heads := &memHeads{heads: map[string]int64{}}
	lister := &switchNodes{}
	lister.set("a", "b")
	heard := make(chan []string, 10)
	aHeads := &signalHeads{memHeads: heads, reads: make(chan struct{}, 10)}
	a := newHeadNodesWith(t, store, heads, []string{"a"}, func(name string, cfg *cluster.Config) {
		cfg.Nodes, cfg.Heads = lister, aHeads
		cfg.OnLiveNodes = func(nodes []string) { heard <- slices.Clone(nodes) }
	})["a"]
	check := func() {
		a.relay.CheckHeads()
		<-aHeads.reads // the keeper reads the live nodes before the heads
	}
	nothing := func(when string) {
		t.Helper()
		select {
		case got := <-heard:
			t.Errorf("OnLiveNodes heard %v %s", got, when)
		default:
		}
	}
	<-aHeads.reads // Start's check
	if got := <-heard; !slices.Equal(got, []string{"a", "b"}) {
		t.Errorf("OnLiveNodes heard %v, want [a b]", got)
	}
	lister.set("a") // b is gone
	check()
	if got := <-heard; !slices.Equal(got, []string{"a"}) {
		t.Errorf("OnLiveNodes heard %v, want [a]", got)
	}
	lister.set() // Redis restarted empty
	check()
	nothing("from a listing without this node")
	lister.set("a") // a wrote its entry again; b may not have yet
	check()
	nothing("while routes are unsure")
}
