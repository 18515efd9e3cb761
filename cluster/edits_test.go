package cluster_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/cluster"
	"parley/inmem"
)

// changeLog records the changes a node's relay hands on.
type changeLog struct {
	mu  sync.Mutex
	got []int64 // changes
}

func (c *changeLog) apply(evs []parley.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, ev := range evs {
		c.got = append(c.got, ev.Message.Change)
	}
}

func (c *changeLog) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.got)
}

// TestChangesReachEveryNode: an edit committed on node a reaches the
// changes hook of a itself and of every other live node, those with members
// of the room and one without, with one publish per other node.
func TestChangesReachEveryNode(t *testing.T) {
	store := &fakeStore{members: map[string][]string{"r": {"x", "y"}}, msgs: map[string][]parley.Message{}}
	ex, reg := inmem.NewExchange(), inmem.NewRegistry()
	names := []string{"a", "b", "c"}
	logs := map[string]*changeLog{}
	relays := map[string]*cluster.Relay{}
	brokers := map[string]*countingBroker{}
	for _, name := range names {
		local := &fakeLocal{got: map[string][]int64{}}
		logs[name] = &changeLog{}
		relay := cluster.New(cluster.Config{Node: name, Store: store, Local: local, ApplyLeaves: local.applyLeaves,
			ApplyChanges: logs[name].apply, Nodes: staticNodes(names), GapWait: 20 * time.Millisecond})
		broker := ex.Broker(inmem.BrokerConfig{Node: name, Handler: relay.Receive, Gone: relay.Gone})
		presence := reg.Presence(inmem.PresenceConfig{Node: name, OnChange: relay.PresenceChanged})
		brokers[name] = &countingBroker{Broker: broker}
		relay.Start(brokers[name], presence)
		t.Cleanup(func() { relay.Close(); broker.Close(); presence.Close() })
		relays[name] = relay
		if name == "b" {
			presence.Add(context.Background(), "x")
		}
	}
	room := parley.Room{ID: "r", LastSeq: 1, LastChange: 1}
	msg := parley.Message{ID: "m", RoomID: "r", Seq: 1, SenderID: "x", Body: "edited", Change: 1}
	relays["a"].Apply([]parley.Event{{Kind: parley.EventEdited, Room: room, UserID: "x", Message: msg}})
	deadline := time.Now().Add(5 * time.Second)
	for logs["a"].len() < 1 || logs["b"].len() < 1 || logs["c"].len() < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("changes handed on: a %d, b %d, c %d; want 1 each", logs["a"].len(), logs["b"].len(), logs["c"].len())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if n := brokers["a"].count(); n != 2 {
		t.Errorf("node a published %d batches for one change, want 2 (one per other node)", n)
	}
	for _, name := range names {
		if got := logs[name].len(); got != 1 {
			t.Errorf("node %s handed on %d changes, want 1", name, got)
		}
	}
}
