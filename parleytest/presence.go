package parleytest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"parley"
)

// NewPresenceFunc returns the presence of one node of a cluster, with its
// change hook (nil for none). Every presence made by the same
// NewPresenceFunc shares one cluster.
type NewPresenceFunc func(node string, hook parley.PresenceHook) parley.Presence

// NewPresenceClusterFunc returns a NewPresenceFunc for a fresh, empty
// cluster whose entries live for ttl without a heartbeat. It registers its
// own cleanup with t; so does every presence it makes.
type NewPresenceClusterFunc func(t *testing.T, ttl time.Duration) NewPresenceFunc

// Crasher is implemented by a presence that can stop its heartbeat without
// removing its entries, as a killed node would. The suite's expiry test
// runs only for implementations that have it.
type Crasher interface{ Crash() }

// RunPresenceTests runs the parley.Presence conformance suite, each subtest
// on a fresh cluster.
func RunPresenceTests(t *testing.T, newCluster NewPresenceClusterFunc) {
	tests := []struct {
		name string
		run  func(t *testing.T, newCluster NewPresenceClusterFunc)
	}{
		{"AddAndNodes", testPresenceAddNodes},
		{"SessionCount", testPresenceSessionCount},
		{"DropNode", testPresenceDropNode},
		{"Hooks", testPresenceHooks},
		{"Heartbeat", testPresenceHeartbeat},
		{"Expiry", testPresenceExpiry},
		{"Close", testPresenceClose},
		{"Concurrent", testPresenceConcurrent},
		{"Reopen", testPresenceReopen},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newCluster) })
	}
}

// MustAdd records a session or fails the test.
func MustAdd(t testing.TB, p parley.Presence, user string) {
	t.Helper()
	if err := p.Add(context.Background(), user); err != nil {
		t.Fatalf("Add(%s) error = %v", user, err)
	}
}

// MustRemove ends a session or fails the test.
func MustRemove(t testing.TB, p parley.Presence, user string) {
	t.Helper()
	if err := p.Remove(context.Background(), user); err != nil {
		t.Fatalf("Remove(%s) error = %v", user, err)
	}
}

// NodesOf returns the sorted nodes of each user, as one string per user.
func NodesOf(t testing.TB, p parley.Presence, users ...string) map[string]string {
	t.Helper()
	got, err := p.Nodes(context.Background(), users)
	if err != nil {
		t.Fatalf("Nodes(%v) error = %v", users, err)
	}
	out := map[string]string{}
	for u, nodes := range got {
		nodes = slices.Clone(nodes)
		slices.Sort(nodes)
		out[u] = fmt.Sprint(nodes)
	}
	return out
}

func checkNodes(t *testing.T, step string, got, want map[string]string) {
	t.Helper()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s: Nodes = %v, want %v", step, got, want)
	}
}

func testPresenceAddNodes(t *testing.T, newCluster NewPresenceClusterFunc) {
	newPresence := newCluster(t, 10*time.Second)
	a, b := newPresence("a", nil), newPresence("b", nil)
	MustAdd(t, a, "u1")
	MustAdd(t, a, "u2")
	MustAdd(t, b, "u2")
	want := map[string]string{"u1": "[a]", "u2": "[a b]"}
	checkNodes(t, "from a", NodesOf(t, a, "u1", "u2", "u3"), want)
	checkNodes(t, "from b", NodesOf(t, b, "u1", "u2", "u3"), want)
	checkNodes(t, "no users", NodesOf(t, a), map[string]string{})
}

func testPresenceSessionCount(t *testing.T, newCluster NewPresenceClusterFunc) {
	newPresence := newCluster(t, 10*time.Second)
	a := newPresence("a", nil)
	MustAdd(t, a, "u1")
	MustAdd(t, a, "u1")
	MustRemove(t, a, "u1")
	checkNodes(t, "one of two sessions ended", NodesOf(t, a, "u1"), map[string]string{"u1": "[a]"})
	MustRemove(t, a, "u1")
	checkNodes(t, "both ended", NodesOf(t, a, "u1"), map[string]string{})
	MustRemove(t, a, "u1") // never added now: changes nothing
	MustRemove(t, a, "nobody")
	MustAdd(t, a, "u1")
	checkNodes(t, "added again", NodesOf(t, a, "u1"), map[string]string{"u1": "[a]"})
}

func testPresenceDropNode(t *testing.T, newCluster NewPresenceClusterFunc) {
	newPresence := newCluster(t, 10*time.Second)
	a, b := newPresence("a", nil), newPresence("b", nil)
	MustAdd(t, a, "u1")
	MustAdd(t, b, "u1")
	MustAdd(t, b, "u2")
	if err := a.DropNode(context.Background(), "b"); err != nil {
		t.Fatalf("DropNode(b) error = %v", err)
	}
	checkNodes(t, "after DropNode(b)", NodesOf(t, a, "u1", "u2"), map[string]string{"u1": "[a]"})
}

// hookLog records the users a change hook was called with.
type hookLog struct {
	mu    sync.Mutex // guards users: hooks run on the presence's goroutines
	users []string
}

func (h *hookLog) hook(u string) {
	h.mu.Lock()
	h.users = append(h.users, u)
	h.mu.Unlock()
}

// waitFor waits until the hook heard about user (or about everything).
func (h *hookLog) waitFor(t *testing.T, user string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		h.mu.Lock()
		ok := slices.Contains(h.users, user) || slices.Contains(h.users, "")
		h.users = h.users[:0]
		h.mu.Unlock()
		if ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the change hook did not hear about %q", user)
}

func testPresenceHooks(t *testing.T, newCluster NewPresenceClusterFunc) {
	newPresence := newCluster(t, 10*time.Second)
	var hb hookLog
	a := newPresence("a", nil)
	b := newPresence("b", hb.hook)
	if err := b.Ping(context.Background()); err != nil {
		t.Fatalf("Ping() error = %v", err)
	}
	time.Sleep(100 * time.Millisecond) // let b's notifications start
	MustAdd(t, a, "u1")
	hb.waitFor(t, "u1")
	MustRemove(t, a, "u1")
	hb.waitFor(t, "u1")
	if err := a.DropNode(context.Background(), "c"); err != nil {
		t.Fatalf("DropNode(c) error = %v", err)
	}
	hb.waitFor(t, "")
}

// testPresenceHeartbeat: the heartbeat keeps entries alive past their TTL.
func testPresenceHeartbeat(t *testing.T, newCluster NewPresenceClusterFunc) {
	const ttl = 600 * time.Millisecond
	newPresence := newCluster(t, ttl)
	a := newPresence("a", nil)
	MustAdd(t, a, "u1")
	time.Sleep(3 * ttl)
	checkNodes(t, "after 3 TTLs with a heartbeat", NodesOf(t, a, "u1"), map[string]string{"u1": "[a]"})
}

// testPresenceExpiry: the entries of a node that stopped its heartbeat
// without removing them expire after the TTL, and the live nodes' change
// hooks hear of it.
func testPresenceExpiry(t *testing.T, newCluster NewPresenceClusterFunc) {
	const ttl = 600 * time.Millisecond
	newPresence := newCluster(t, ttl)
	var ha hookLog
	a, b := newPresence("a", ha.hook), newPresence("b", nil)
	c, ok := b.(Crasher)
	if !ok {
		t.Skip("the implementation cannot simulate a crash")
	}
	MustAdd(t, a, "u1")
	MustAdd(t, b, "u1")
	c.Crash()
	checkNodes(t, "just after the crash", NodesOf(t, a, "u1"), map[string]string{"u1": "[a b]"})
	time.Sleep(100 * time.Millisecond) // let the hook hear the adds
	ha.mu.Lock()
	ha.users = ha.users[:0]
	ha.mu.Unlock()
	time.Sleep(ttl + 300*time.Millisecond)
	checkNodes(t, "one TTL after the crash", NodesOf(t, a, "u1"), map[string]string{"u1": "[a]"})
	ha.waitFor(t, "")
}

func testPresenceClose(t *testing.T, newCluster NewPresenceClusterFunc) {
	newPresence := newCluster(t, 10*time.Second)
	a, b := newPresence("a", nil), newPresence("b", nil)
	MustAdd(t, a, "u1")
	MustAdd(t, b, "u1")
	MustAdd(t, b, "u2")
	if err := b.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	checkNodes(t, "after b closed", NodesOf(t, a, "u1", "u2"), map[string]string{"u1": "[a]"})
}

func testPresenceConcurrent(t *testing.T, newCluster NewPresenceClusterFunc) {
	newPresence := newCluster(t, 10*time.Second)
	nodes := []parley.Presence{newPresence("a", nil), newPresence("b", nil), newPresence("c", nil)}
	const users = 200
	var wg sync.WaitGroup
	for i, p := range nodes {
		wg.Go(func() {
			for u := range users {
				if u%3 != i {
					MustAdd(t, p, fmt.Sprintf("u%d", u))
				}
			}
		})
	}
	wg.Wait()
	ids := make([]string, users)
	for u := range ids {
		ids[u] = fmt.Sprintf("u%d", u)
	}
	got := NodesOf(t, nodes[0], ids...)
	names := []string{"a", "b", "c"}
	for u := range users {
		var want []string
		for i, n := range names {
			if u%3 != i {
				want = append(want, n)
			}
		}
		if got[ids[u]] != fmt.Sprint(want) {
			t.Errorf("Nodes(%s) = %s, want %v", ids[u], got[ids[u]], want)
		}
	}
}

// testPresenceReopen: a user's session closed and reopened at once on one
// node, from two goroutines, leaves the user present while a session is
// open.
func testPresenceReopen(t *testing.T, newCluster NewPresenceClusterFunc) {
	a := newCluster(t, time.Minute)("a", nil)
	ctx := context.Background()
	for i := range 100 {
		MustAdd(t, a, "u")
		var wg sync.WaitGroup
		wg.Go(func() { a.Remove(ctx, "u") })
		wg.Go(func() { a.Add(ctx, "u") })
		wg.Wait()
		if got := NodesOf(t, a, "u"); got["u"] != "[a]" {
			t.Fatalf("round %d: with one session open Nodes = %v, want u on [a]", i, got)
		}
		a.Remove(ctx, "u")
	}
}
