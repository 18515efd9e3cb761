package cluster_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"parley"
	"parley/cluster"
	"parley/inmem"
	"parley/parleytest"
)

// fakeStore holds one room's members and messages.
type fakeStore struct {
	mu      sync.Mutex
	members map[string][]string
	msgs    map[string][]parley.Message
	reads   int // Members calls
}

func (s *fakeStore) Members(ctx context.Context, roomID string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads++
	return slices.Clone(s.members[roomID]), nil
}

func (s *fakeStore) memberReads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.reads
}

// leave removes a member and returns the leave event.
func (s *fakeStore) leave(roomID, user string) parley.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.members[roomID] = slices.DeleteFunc(s.members[roomID], func(id string) bool { return id == user })
	return parley.Event{Kind: parley.EventLeave, Room: parley.Room{ID: roomID}, UserID: user}
}

func (s *fakeStore) Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []parley.Message
	for _, m := range s.msgs[roomID] {
		if m.Seq > p.After && len(out) < p.Limit {
			out = append(out, m)
		}
	}
	return out, nil
}

// commit stores the next message of a room and returns its event.
func (s *fakeStore) commit(roomID, sender string) parley.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := parley.Message{ID: parley.NewID(), RoomID: roomID, Seq: int64(len(s.msgs[roomID]) + 1), SenderID: sender}
	s.msgs[roomID] = append(s.msgs[roomID], m)
	return parley.Event{Kind: parley.EventMessage, Room: parley.Room{ID: roomID, LastSeq: m.Seq}, UserID: sender, Message: m}
}

// fakeLocal records what a node delivers, per user.
type fakeLocal struct {
	mu   sync.Mutex
	got  map[string][]int64 // user -> seqs
	left []string
}

func (l *fakeLocal) applyLeaves(evs []parley.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, ev := range evs {
		l.left = append(l.left, ev.UserID)
	}
}

func (l *fakeLocal) Deliver(m parley.Message, recipients []string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, u := range recipients {
		l.got[u] = append(l.got[u], m.Seq)
	}
}

func (l *fakeLocal) seqs(u string) []int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.got[u])
}

type node struct {
	relay    *cluster.Relay
	local    *fakeLocal
	presence *inmem.Presence
	broker   *inmem.Broker
	batches  *countingBroker
}

// countingBroker counts publishes.
type countingBroker struct {
	parley.Broker
	mu sync.Mutex
	n  int
}

func (b *countingBroker) Publish(ctx context.Context, batch parley.Batch) error {
	b.mu.Lock()
	b.n++
	b.mu.Unlock()
	return b.Broker.Publish(ctx, batch)
}

func (b *countingBroker) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.n
}

func newNodes(t *testing.T, store *fakeStore, names ...string) map[string]*node {
	return newNodesWith(t, store, nil, names...)
}

// newNodesWith is newNodes with node a's relay reading presence through
// wrap (when not nil).
func newNodesWith(t *testing.T, store *fakeStore, wrap func(parley.Presence) parley.Presence, names ...string) map[string]*node {
	ex, reg := inmem.NewExchange(), inmem.NewRegistry()
	nodes := map[string]*node{}
	for _, name := range names {
		n := &node{local: &fakeLocal{got: map[string][]int64{}}}
		n.relay = cluster.New(cluster.Config{Node: name, Store: store, Local: n.local, ApplyLeaves: n.local.applyLeaves, GapWait: 20 * time.Millisecond})
		n.broker = ex.Broker(inmem.BrokerConfig{Node: name, Handler: n.relay.Receive, Gone: n.relay.Gone})
		n.batches = &countingBroker{Broker: n.broker}
		n.presence = reg.Presence(inmem.PresenceConfig{Node: name, OnChange: n.relay.PresenceChanged})
		var p parley.Presence = n.presence
		if name == "a" && wrap != nil {
			p = wrap(n.presence)
		}
		n.relay.Start(n.batches, p)
		t.Cleanup(func() { n.relay.Close(); n.broker.Close(); n.presence.Close() })
		nodes[name] = n
	}
	return nodes
}

func waitSeqs(t *testing.T, l *fakeLocal, user string, n int) []int64 {
	t.Helper()
	var got []int64
	parleytest.Poll(5*time.Second, func() bool { got = l.seqs(user); return len(got) >= n })
	return got
}

// waitSeq waits until user has been delivered seq, and returns their seqs.
func waitSeq(t *testing.T, l *fakeLocal, user string, seq int64) []int64 {
	t.Helper()
	var got []int64
	if !parleytest.Poll(5*time.Second, func() bool { got = l.seqs(user); return slices.Contains(got, seq) }) {
		t.Fatalf("%s never got seq %d: got %d seqs", user, seq, len(got))
	}
	return got
}

func wantSeqs(n int) []int64 {
	s := make([]int64, n)
	for i := range s {
		s[i] = int64(i + 1)
	}
	return s
}

// TestRoomAcrossNodes: members on three nodes, senders on every node: each
// member gets every seq once, in order, and each message causes at most one
// publish per other node that has members.
func TestRoomAcrossNodes(t *testing.T) {
	store := &fakeStore{members: map[string][]string{}, msgs: map[string][]parley.Message{}}
	nodes := newNodes(t, store, "a", "b", "c")
	var users []string
	for i := range 30 {
		u := fmt.Sprintf("u%d", i)
		users = append(users, u)
		n := nodes[[]string{"a", "b", "c"}[i%3]]
		n.presence.Add(context.Background(), u)
	}
	store.members["r"] = users
	// Every node sees the room's first message before the race: a node
	// that has never seen a room starts it at the oldest message it holds
	// after GapWait, which a loaded machine can make later than seq 1.
	nodes["a"].relay.Apply([]parley.Event{store.commit("r", "u0")})
	for i, u := range users {
		waitSeqs(t, nodes[[]string{"a", "b", "c"}[i%3]].local, u, 1)
	}
	const total = 301
	var mu sync.Mutex // commits are serialized like the store's seq
	var wg sync.WaitGroup
	for _, name := range []string{"a", "b", "c"} {
		wg.Go(func() {
			for range total / 3 {
				mu.Lock()
				ev := store.commit("r", "u0")
				nodes[name].relay.Apply([]parley.Event{ev})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	for i, u := range users {
		n := nodes[[]string{"a", "b", "c"}[i%3]]
		if got := waitSeqs(t, n.local, u, total); !slices.Equal(got, wantSeqs(total)) {
			t.Fatalf("user %s got %d seqs %v..., want 1..%d in order", u, len(got), got[:min(len(got), 20)], total)
		}
	}
	for name, n := range nodes {
		if c := n.batches.count(); c > 2*(total/3+1) {
			t.Errorf("node %s published %d batches for at most %d messages, want at most 2 per message", name, c, total/3+1)
		}
	}
}

// TestSameNodeNoPublish: a room whose members are all on the sending node
// causes no publish.
func TestSameNodeNoPublish(t *testing.T) {
	store := &fakeStore{members: map[string][]string{"r": {"x", "y"}}, msgs: map[string][]parley.Message{}}
	nodes := newNodes(t, store, "a", "b")
	nodes["a"].presence.Add(context.Background(), "x")
	nodes["a"].presence.Add(context.Background(), "y")
	nodes["b"].presence.Add(context.Background(), "z")
	for range 10 {
		nodes["a"].relay.Apply([]parley.Event{store.commit("r", "x")})
	}
	if got := waitSeqs(t, nodes["a"].local, "y", 10); !slices.Equal(got, wantSeqs(10)) {
		t.Fatalf("y got %v", got)
	}
	if c := nodes["a"].batches.count(); c != 0 {
		t.Errorf("%d publishes, want 0", c)
	}
}

// TestGapFilledFromStore: a message that never reached a node (it was
// published elsewhere) is read from the store, so the next arrives after it.
func TestGapFilledFromStore(t *testing.T) {
	store := &fakeStore{members: map[string][]string{"r": {"x", "y"}}, msgs: map[string][]parley.Message{}}
	nodes := newNodes(t, store, "a", "b")
	nodes["b"].presence.Add(context.Background(), "y")
	a := nodes["a"]
	a.relay.Apply([]parley.Event{store.commit("r", "x")})
	waitSeqs(t, nodes["b"].local, "y", 1)
	store.commit("r", "x") // seq 2 is committed but never published
	a.relay.Apply([]parley.Event{store.commit("r", "x")})
	a.relay.Apply([]parley.Event{store.commit("r", "x")})
	if got := waitSeqs(t, nodes["b"].local, "y", 4); !slices.Equal(got, wantSeqs(4)) {
		t.Fatalf("y got %v, want 1..4", got)
	}
}

// TestWideGapFilledFromStore: a gap of several history pages (a node's
// batches lagging behind the others' under load) is read from the store a
// page at a time; the batches that arrive late are then duplicates.
func TestWideGapFilledFromStore(t *testing.T) {
	store := &fakeStore{members: map[string][]string{"r": {"x", "y"}}, msgs: map[string][]parley.Message{}}
	nodes := newNodes(t, store, "a", "b")
	nodes["b"].presence.Add(context.Background(), "y")
	a := nodes["a"]
	a.relay.Apply([]parley.Event{store.commit("r", "x")})
	waitSeqs(t, nodes["b"].local, "y", 1)
	const gap = 3*parley.MaxPageLimit + 50
	var late []parley.Event
	for range gap {
		late = append(late, store.commit("r", "x")) // committed, not yet published
	}
	a.relay.Apply([]parley.Event{store.commit("r", "x")})
	want := wantSeqs(gap + 2)
	if got := waitSeqs(t, nodes["b"].local, "y", len(want)); !slices.Equal(got, want) {
		t.Fatalf("y got %d seqs %v..., want 1..%d", len(got), got[:min(len(got), 10)], len(want))
	}
	a.relay.Apply(late)
	// A marker after the late batches: once it is delivered, they have
	// been handled (one relay, one broker queue, in order).
	marker := store.commit("r", "x")
	a.relay.Apply([]parley.Event{marker})
	got := waitSeq(t, nodes["b"].local, "y", marker.Message.Seq)
	if got = slices.DeleteFunc(got, func(seq int64) bool { return seq == marker.Message.Seq }); len(got) != len(want) {
		t.Errorf("y got %d messages after the late batches, want %d: they are duplicates", len(got), len(want))
	}
}

// TestDuplicatesDropped: a batch delivered twice reaches the user once.
func TestDuplicatesDropped(t *testing.T) {
	store := &fakeStore{members: map[string][]string{"r": {"y"}}, msgs: map[string][]parley.Message{}}
	nodes := newNodes(t, store, "b")
	b := nodes["b"]
	for range 3 {
		ev := store.commit("r", "x")
		batch := parley.Batch{Node: "b", Event: ev, Recipients: []string{"y"}}
		b.relay.Receive(batch)
		b.relay.Receive(batch)
	}
	if got := waitSeqs(t, b.local, "y", 3); !slices.Equal(got, wantSeqs(3)) {
		t.Fatalf("y got %v, want 1..3 once", got)
	}
}

// TestLeaveReachesOtherNodes: a leave committed on one node ends the
// user's room subscriptions on the node holding their session.
func TestLeaveReachesOtherNodes(t *testing.T) {
	store := &fakeStore{members: map[string][]string{"r": {"x", "y"}}, msgs: map[string][]parley.Message{}}
	nodes := newNodes(t, store, "a", "b")
	nodes["b"].presence.Add(context.Background(), "y")
	nodes["a"].relay.Apply([]parley.Event{{Kind: parley.EventLeave, Room: parley.Room{ID: "r"}, UserID: "y"}})
	parleytest.Eventually(t, 5*time.Second, func() bool {
		nodes["b"].local.mu.Lock()
		defer nodes["b"].local.mu.Unlock()
		return slices.Contains(nodes["b"].local.left, "y")
	}, "node b never applied y's leave")
}

// TestReceiveReturnsAfterDelivery: the broker acknowledges a batch when
// Receive returns, so by then its message has reached the local fan-out;
// a relay closed before it started releases a waiting Receive.
func TestReceiveReturnsAfterDelivery(t *testing.T) {
	store := &fakeStore{members: map[string][]string{"r": {"y"}}, msgs: map[string][]parley.Message{}}
	b := newNodes(t, store, "b")["b"]
	for i := range 50 {
		b.relay.Receive(parley.Batch{Node: "b", Event: store.commit("r", "x"), Recipients: []string{"y"}})
		if got := b.local.seqs("y"); len(got) != i+1 {
			t.Fatalf("after Receive of seq %d the fan-out had %v", i+1, got)
		}
	}

	idleLocal := &fakeLocal{got: map[string][]int64{}}
	reg := prometheus.NewRegistry()
	idle := cluster.New(cluster.Config{Node: "c", Store: store, Local: idleLocal, ApplyLeaves: idleLocal.applyLeaves, Registerer: reg})
	returned := make(chan struct{})
	go func() {
		idle.Receive(parley.Batch{Node: "c", Event: store.commit("r", "x")})
		close(returned)
	}()
	waitGauge(t, reg, "parley_cluster_queued", 1) // Receive has queued its batch
	idle.Close()
	select {
	case <-returned:
	case <-time.After(5 * time.Second):
		t.Fatal("Receive on a relay closed before Start did not return")
	}
}

// waitGauge waits until the gauge name in reg reads want.
func waitGauge(t *testing.T, reg *prometheus.Registry, name string, want float64) {
	t.Helper()
	parleytest.Eventually(t, 5*time.Second, func() bool {
		mfs, err := reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() == name && len(mf.GetMetric()) == 1 && mf.GetMetric()[0].GetGauge().GetValue() == want {
				return true
			}
		}
		return false
	}, "%s never reached %v", name, want)
}

// countingPresence counts the users looked up.
type countingPresence struct {
	parley.Presence
	mu    sync.Mutex
	users int
}

func (p *countingPresence) Nodes(ctx context.Context, userIDs []string) (map[string][]string, error) {
	p.mu.Lock()
	p.users += len(userIDs)
	p.mu.Unlock()
	return p.Presence.Nodes(ctx, userIDs)
}

func (p *countingPresence) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.users
}

// TestPresenceChangeRereadsOnlyThatUser: after one member's presence
// changes, the route is rebuilt from the remembered nodes of the others
// and a lookup of that member alone, and delivery follows the change.
func TestPresenceChangeRereadsOnlyThatUser(t *testing.T) {
	store := &fakeStore{members: map[string][]string{}, msgs: map[string][]parley.Message{}}
	names := []string{"a", "b", "c"}
	var counted *countingPresence
	nodes := newNodesWith(t, store, func(p parley.Presence) parley.Presence {
		counted = &countingPresence{Presence: p}
		return counted
	}, names...)
	var users []string
	for i := range 60 {
		u := fmt.Sprintf("u%d", i)
		users = append(users, u)
		nodes[names[i%3]].presence.Add(context.Background(), u)
	}
	store.members["r"] = users
	a := nodes["a"]
	a.relay.Apply([]parley.Event{store.commit("r", "u0")})
	waitSeqs(t, nodes["c"].local, "u2", 1)
	before := counted.count()

	// u2 moves from c to b.
	nodes["c"].presence.Remove(context.Background(), "u2")
	nodes["b"].presence.Add(context.Background(), "u2")
	a.relay.Apply([]parley.Event{store.commit("r", "u0")})
	if got := waitSeqs(t, nodes["b"].local, "u2", 1); !slices.Equal(got, []int64{2}) {
		t.Fatalf("u2 on b got %v, want seq 2", got)
	}
	if got := nodes["c"].local.seqs("u2"); !slices.Equal(got, []int64{1}) {
		t.Errorf("u2's old node c got %v, want only seq 1", got)
	}
	if got := counted.count() - before; got != 1 {
		t.Errorf("the rebuilt route looked up %d users, want 1 (u2)", got)
	}
}

// changingPresence reports a change of an unrelated user during every
// lookup, as a storm of reconnects elsewhere would.
type changingPresence struct {
	*countingPresence
	relay *cluster.Relay
}

func (p *changingPresence) Nodes(ctx context.Context, userIDs []string) (map[string][]string, error) {
	p.relay.PresenceChanged("someone-else")
	return p.countingPresence.Nodes(ctx, userIDs)
}

// TestChangesDuringReadKeepTheRest: a presence change of another user
// while the relay reads presence does not throw the read away.
func TestChangesDuringReadKeepTheRest(t *testing.T) {
	store := &fakeStore{members: map[string][]string{}, msgs: map[string][]parley.Message{}}
	ex, reg := inmem.NewExchange(), inmem.NewRegistry()
	local := &fakeLocal{got: map[string][]int64{}}
	relay := cluster.New(cluster.Config{Node: "a", Store: store, Local: local, ApplyLeaves: local.applyLeaves})
	broker := ex.Broker(inmem.BrokerConfig{Node: "a", Handler: relay.Receive, Gone: relay.Gone})
	presence := reg.Presence(inmem.PresenceConfig{Node: "a"})
	counted := &countingPresence{Presence: presence}
	relay.Start(broker, &changingPresence{countingPresence: counted, relay: relay})
	t.Cleanup(func() { relay.Close(); broker.Close(); presence.Close() })
	var users []string
	for i := range 100 {
		u := fmt.Sprintf("u%d", i)
		users = append(users, u)
		presence.Add(context.Background(), u)
	}
	store.members["r"] = users
	for range 5 {
		relay.Apply([]parley.Event{store.commit("r", "u0")})
	}
	waitSeqs(t, local, "u99", 5)
	if got := counted.count(); got != 100 {
		t.Errorf("5 messages looked up %d users, want 100 (each once)", got)
	}
	if got := store.memberReads(); got != 1 {
		t.Errorf("5 messages read the members %d times, want once", got)
	}
}

// failingPresence fails its lookups while down is set.
type failingPresence struct {
	parley.Presence
	down atomic.Bool
}

func (p *failingPresence) Nodes(ctx context.Context, userIDs []string) (map[string][]string, error) {
	if p.down.Load() {
		return nil, parley.Errorf(parley.CodeUnavailable, "presence down (test)")
	}
	return p.Presence.Nodes(ctx, userIDs)
}

// TestPresenceDownKeepsLastRoute: when presence cannot be read, a room
// whose route was dropped (a join) still reaches the other nodes through
// its last route, cut to the current members; and presence changes alone
// do not make the relay reread the members.
func TestPresenceDownKeepsLastRoute(t *testing.T) {
	store := &fakeStore{members: map[string][]string{"r": {"x", "y", "z"}}, msgs: map[string][]parley.Message{}}
	var fp *failingPresence
	nodes := newNodesWith(t, store, func(p parley.Presence) parley.Presence {
		fp = &failingPresence{Presence: p}
		return fp
	}, "a", "b")
	a, locals := nodes["a"].relay, map[string]*fakeLocal{"a": nodes["a"].local, "b": nodes["b"].local}
	nodes["a"].presence.Add(context.Background(), "x")
	nodes["b"].presence.Add(context.Background(), "y")
	a.Apply([]parley.Event{store.commit("r", "x")})
	waitSeqs(t, locals["b"], "y", 1)
	reads := store.memberReads()
	for range 3 { // presence changes only: the members stay cached
		a.PresenceChanged("someone")
		a.Apply([]parley.Event{store.commit("r", "x")})
	}
	waitSeqs(t, locals["b"], "y", 4)
	if got := store.memberReads() - reads; got != 0 {
		t.Errorf("presence changes made %d member reads, want 0", got)
	}

	fp.down.Store(true)
	a.PresenceChanged("")                          // forget every user's nodes: the next route must read presence
	a.Apply([]parley.Event{store.leave("r", "z")}) // drops the route and the members
	a.Apply([]parley.Event{store.commit("r", "x")})
	if got := waitSeqs(t, locals["b"], "y", 5); !slices.Equal(got, wantSeqs(5)) {
		t.Errorf("with presence down, y on b got %v, want 1..5", got)
	}
}

// TestRoomsForgottenByNumber: a room's delivery position is kept however
// long the room is quiet, so a message of a quiet chat is delivered at
// once, not held for GapWait as a room never seen is; only past MaxPositions
// are the least recently used rooms forgotten.
func TestRoomsForgottenByNumber(t *testing.T) {
	store := &fakeStore{members: map[string][]string{}, msgs: map[string][]parley.Message{}}
	local := &fakeLocal{got: map[string][]int64{}}
	relay := cluster.New(cluster.Config{Node: "b", Store: store, Local: local, ApplyLeaves: local.applyLeaves, GapWait: time.Hour, MaxPositions: 10})
	ex, reg := inmem.NewExchange(), inmem.NewRegistry()
	broker := ex.Broker(inmem.BrokerConfig{Node: "b", Handler: relay.Receive, Gone: relay.Gone})
	presence := reg.Presence(inmem.PresenceConfig{Node: "b", OnChange: relay.PresenceChanged})
	relay.Start(broker, presence)
	t.Cleanup(func() { relay.Close(); broker.Close(); presence.Close() })
	// Each room's recipient is named after the room; Receive returns once
	// its message is delivered or held.
	receive := func(room string) {
		relay.Receive(parley.Batch{Node: "b", Event: store.commit(room, "x"), Recipients: []string{room}})
	}
	delivered := func(room string) int { return len(local.seqs(room)) }

	receive("quiet")
	for i := range 8 {
		receive(fmt.Sprint("busy", i))
	}
	receive("quiet")
	if got := delivered("quiet"); got != 2 {
		t.Fatalf("the quiet room's second message: %d of 2 delivered when Receive returned, want it delivered at once", got)
	}
	for i := 8; i < 30; i++ {
		receive(fmt.Sprint("busy", i))
	}
	receive("quiet") // forgotten among 30 rooms: held like a room never seen
	if got := delivered("quiet"); got != 2 {
		t.Errorf("after 30 other rooms with MaxPositions 10: %d delivered, want the third message held", got)
	}
}
