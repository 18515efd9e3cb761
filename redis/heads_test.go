package redis_test

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"
	"time"

	"parley/parleytest"
	"parley/redis"
)

// TestHeadsMoveForwardOnly: heads written by several nodes in any order
// keep the highest seq; rooms without a head are absent; reads and writes
// of more rooms than one command holds are split.
func TestHeadsMoveForwardOnly(t *testing.T) {
	rdb, prefix := testClient(t)
	ctx := context.Background()
	h := redis.NewHeads(rdb, prefix)
	steps := []struct {
		name    string
		advance map[string]int64
		read    []string
		want    map[string]int64
	}{
		{"first heads", map[string]int64{"a": 3, "b": 1}, []string{"a", "b", "c"}, map[string]int64{"a": 3, "b": 1}},
		{"an older commit arrives late", map[string]int64{"a": 2}, []string{"a"}, map[string]int64{"a": 3}},
		{"newer commits", map[string]int64{"a": 9, "c": 4}, []string{"a", "b", "c"}, map[string]int64{"a": 9, "b": 1, "c": 4}},
		{"nothing asked", nil, nil, map[string]int64{}},
	}
	for _, st := range steps {
		if err := h.Advance(ctx, st.advance); err != nil {
			t.Fatalf("%s: Advance(%v): %v", st.name, st.advance, err)
		}
		got, err := h.Heads(ctx, st.read)
		if err != nil {
			t.Fatalf("%s: Heads(%v): %v", st.name, st.read, err)
		}
		if !maps.Equal(got, st.want) {
			t.Errorf("%s: Heads(%v) = %v, want %v", st.name, st.read, got, st.want)
		}
	}

	many := map[string]int64{}
	var rooms []string
	for i := range 2500 {
		room := fmt.Sprint("room", i)
		many[room] = int64(i + 1)
		rooms = append(rooms, room)
	}
	if err := h.Advance(ctx, many); err != nil {
		t.Fatalf("Advance(2,500 rooms): %v", err)
	}
	got, err := h.Heads(ctx, append(rooms, "none"))
	if err != nil {
		t.Fatalf("Heads(2,501 rooms): %v", err)
	}
	if !maps.Equal(got, many) {
		t.Errorf("Heads(2,501 rooms) = %d heads, want the 2,500 written", len(got))
	}
}

// TestLiveNodes: a node is live from its first heartbeat until Close.
func TestLiveNodes(t *testing.T) {
	rdb, prefix := testClient(t)
	ctx := context.Background()
	a := redis.NewPresence(redis.PresenceConfig{Client: rdb, Prefix: prefix, Node: "a", TTL: 3 * time.Second})
	b := redis.NewPresence(redis.PresenceConfig{Client: rdb, Prefix: prefix, Node: "b", TTL: 3 * time.Second})
	defer a.Close()
	var nodes []string
	parleytest.Poll(10*time.Second, func() bool { // each registers on its heartbeat goroutine
		var err error
		if nodes, err = a.LiveNodes(ctx); err != nil {
			t.Fatal(err)
		}
		slices.Sort(nodes)
		return slices.Equal(nodes, []string{"a", "b"})
	})
	if !slices.Equal(nodes, []string{"a", "b"}) {
		t.Fatalf("LiveNodes() = %v, want [a b]", nodes)
	}
	b.Close()
	if nodes, err := a.LiveNodes(ctx); err != nil || !slices.Equal(nodes, []string{"a"}) {
		t.Errorf("LiveNodes() after b's Close = %v, %v; want [a]", nodes, err)
	}
}
