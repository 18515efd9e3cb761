package cluster_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"parley"
	"parley/cluster"
	"parley/inmem"
	"parley/parleytest"
)

// eventLog records what a relay hands to its node's hub (leaves) and room
// events (the Events hook).
type eventLog struct {
	mu     sync.Mutex
	leaves []parley.Event
	events []parley.Event
}

func (l *eventLog) applyLeaves(evs []parley.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.leaves = append(l.leaves, evs...)
}

func (l *eventLog) onEvent(ev parley.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.events = append(l.events, ev)
}

// await waits until pred holds for the log.
func (l *eventLog) await(t *testing.T, what string, pred func(l *eventLog) bool) {
	t.Helper()
	parleytest.Eventually(t, 5*time.Second, func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return pred(l)
	}, "never: %s", what)
}

func hasKind(evs []parley.Event, k parley.EventKind, user string) bool {
	return slices.ContainsFunc(evs, func(ev parley.Event) bool { return ev.Kind == k && ev.UserID == user })
}

// TestRoomEventsReachOtherNodes: member events (unbans too), with a leave's reason,
// reach the nodes of the room's members, and a typing signal costs one
// publish per other node with online members.
func TestRoomEventsReachOtherNodes(t *testing.T) {
	store := &fakeStore{members: map[string][]string{"r": {"x", "y", "z"}}, msgs: map[string][]parley.Message{}}
	ex, reg := inmem.NewExchange(), inmem.NewRegistry()
	relays, logs, brokers := map[string]*cluster.Relay{}, map[string]*eventLog{}, map[string]*countingBroker{}
	presence := map[string]*inmem.Presence{}
	for _, name := range []string{"a", "b", "c"} {
		log := &eventLog{}
		r := cluster.New(cluster.Config{
			Node: name, Store: store, Local: &fakeLocal{got: map[string][]int64{}},
			ApplyLeaves: log.applyLeaves, Events: log.onEvent, GapWait: 20 * time.Millisecond,
		})
		b := ex.Broker(inmem.BrokerConfig{Node: name, Handler: r.Receive, Gone: r.Gone})
		cb := &countingBroker{Broker: b}
		p := reg.Presence(inmem.PresenceConfig{Node: name, OnChange: r.PresenceChanged})
		r.Start(cb, p)
		t.Cleanup(func() { r.Close(); b.Close(); p.Close() })
		relays[name], logs[name], brokers[name], presence[name] = r, log, cb, p
	}
	ctx := context.Background()
	presence["a"].Add(ctx, "z")
	presence["b"].Add(ctx, "x")
	presence["c"].Add(ctx, "y")

	// A typing signal: one publish to each of b and c, none to a itself.
	before := brokers["a"].count()
	relays["a"].Signal(parley.Event{Kind: parley.EventTyping, Room: parley.Room{ID: "r"}, UserID: "z"})
	for _, n := range []string{"b", "c"} {
		logs[n].await(t, "typing on node "+n, func(l *eventLog) bool { return hasKind(l.events, parley.EventTyping, "z") })
	}
	if got := brokers["a"].count() - before; got != 2 {
		t.Errorf("%d publishes for one typing signal to two other nodes, want 2", got)
	}

	// A role change and a removal reach b and c; the removal's reason
	// travels, so node c (y's) ends y's subscriptions as a removal.
	relays["a"].Apply([]parley.Event{
		{Kind: parley.EventRole, Room: parley.Room{ID: "r"}, UserID: "x", Role: parley.RoleAdmin, ActorID: "z"},
		{Kind: parley.EventLeave, Room: parley.Room{ID: "r"}, UserID: "y", Reason: parley.LeaveBanned, ActorID: "z"},
		{Kind: parley.EventUnban, Room: parley.Room{ID: "r"}, UserID: "w", ActorID: "z"}, // w is no member
	})
	for _, n := range []string{"b", "c"} {
		logs[n].await(t, "role, leave and unban on node "+n, func(l *eventLog) bool {
			return hasKind(l.events, parley.EventRole, "x") && hasKind(l.events, parley.EventLeave, "y") &&
				hasKind(l.events, parley.EventUnban, "w")
		})
	}
	logs["c"].await(t, "y's ban applied on node c", func(l *eventLog) bool {
		return slices.ContainsFunc(l.leaves, func(ev parley.Event) bool {
			return ev.UserID == "y" && ev.Reason == parley.LeaveBanned && ev.ActorID == "z"
		})
	})
	// An edit and a deletion reach the room events of b and c (their
	// subscribers get edited and deleted events), with the new version.
	edited := parley.Message{ID: "m1", RoomID: "r", Seq: 1, SenderID: "x", Body: "new", Change: 1}
	deleted := parley.Message{ID: "m2", RoomID: "r", Seq: 2, SenderID: "x", Change: 2, DeletedAt: &edited.SentAt}
	relays["a"].Apply([]parley.Event{
		{Kind: parley.EventEdited, Room: parley.Room{ID: "r", LastChange: 1}, UserID: "x", Message: edited},
		{Kind: parley.EventDeleted, Room: parley.Room{ID: "r", LastChange: 2}, UserID: "z", Message: deleted},
	})
	for _, n := range []string{"b", "c"} {
		logs[n].await(t, "edit and deletion on node "+n, func(l *eventLog) bool {
			return slices.ContainsFunc(l.events, func(ev parley.Event) bool {
				return ev.Kind == parley.EventEdited && ev.Message.Body == "new" && ev.Message.Change == 1
			}) && slices.ContainsFunc(l.events, func(ev parley.Event) bool {
				return ev.Kind == parley.EventDeleted && ev.Message.Deleted() && ev.Message.Change == 2
			})
		})
	}
}

// blockingStore is a fakeStore whose member lookups of one room block
// until release is closed; entered is closed when the first one starts.
type blockingStore struct {
	*fakeStore
	room    string
	once    sync.Once
	entered chan struct{}
	release chan struct{}
}

func (s *blockingStore) Members(ctx context.Context, roomID string) ([]string, error) {
	if roomID == s.room {
		s.once.Do(func() { close(s.entered) })
		<-s.release // past the relay's own 2 s bound: a stuck read
	}
	return s.fakeStore.Members(ctx, roomID)
}

// TestSlowSignalRouteDoesNotDelayMessages: a typing signal whose route
// lookup blocks (its room's members cannot be read) does not hold up the
// relay of a message of another room: the message reaches the other node
// while the lookup is still blocked. The signals queued behind the blocked
// one are bounded: the excess is dropped and counted.
func TestSlowSignalRouteDoesNotDelayMessages(t *testing.T) {
	store := &blockingStore{
		fakeStore: &fakeStore{members: map[string][]string{"quiet": {"x", "y"}, "busy": {"x", "y"}}, msgs: map[string][]parley.Message{}},
		room:      "quiet", entered: make(chan struct{}), release: make(chan struct{}),
	}
	ex, reg := inmem.NewExchange(), inmem.NewRegistry()
	relays, locals, presence := map[string]*cluster.Relay{}, map[string]*fakeLocal{}, map[string]*inmem.Presence{}
	regs := map[string]*prometheus.Registry{"a": prometheus.NewRegistry(), "b": prometheus.NewRegistry()}
	for _, name := range []string{"a", "b"} {
		local := &fakeLocal{got: map[string][]int64{}}
		r := cluster.New(cluster.Config{Node: name, Store: store, Local: local, ApplyLeaves: local.applyLeaves, GapWait: 20 * time.Millisecond,
			MaxSignals: 4, Registerer: regs[name]})
		b := ex.Broker(inmem.BrokerConfig{Node: name, Handler: r.Receive, Gone: r.Gone})
		p := reg.Presence(inmem.PresenceConfig{Node: name, OnChange: r.PresenceChanged})
		r.Start(b, p)
		t.Cleanup(func() { r.Close(); b.Close(); p.Close() })
		relays[name], locals[name], presence[name] = r, local, p
	}
	t.Cleanup(func() { close(store.release) }) // runs before the relays close
	ctx := context.Background()
	presence["a"].Add(ctx, "x")
	presence["b"].Add(ctx, "y")

	relays["a"].Signal(parley.Event{Kind: parley.EventTyping, Room: parley.Room{ID: "quiet"}, UserID: "x"})
	<-store.entered // the signal's route lookup is blocked
	for range 10 {  // 4 wait, 6 are dropped
		relays["a"].Signal(parley.Event{Kind: parley.EventTyping, Room: parley.Room{ID: "quiet"}, UserID: "x"})
	}
	relays["a"].Apply([]parley.Event{store.commit("busy", "x")})
	waitSeq(t, locals["b"], "y", 1)
	select {
	case <-store.release:
		t.Fatal("the lookup was released before the message arrived")
	default:
	}
	waitGauge(t, regs["a"], "parley_cluster_signals_queued", 4)
	if got := counterValue(t, regs["a"], "parley_cluster_signals_dropped_total"); got != 6 {
		t.Errorf("%v signals dropped, want 6 (10 behind a blocked one, 4 queued)", got)
	}
}

// counterValue reads the counter name in reg.
func counterValue(t *testing.T, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name && len(mf.GetMetric()) == 1 {
			return mf.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatalf("no counter %s", name)
	return 0
}
