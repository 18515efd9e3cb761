package parleytest

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"parley"
)

// BrokerHooks is what a test node does with what its broker brings.
type BrokerHooks struct {
	Handler parley.BatchHandler
	Gone    func(node string)
}

// NewBrokerFunc returns the broker of one node of a cluster. Every broker
// made by the same NewBrokerFunc shares one cluster.
type NewBrokerFunc func(node string, h BrokerHooks) parley.Broker

// NewClusterFunc returns a NewBrokerFunc for a fresh, empty cluster. It
// registers its own cleanup with t; so does every broker it makes.
type NewClusterFunc func(t *testing.T) NewBrokerFunc

// RunBrokerTests runs the parley.Broker conformance suite, each subtest on
// a fresh cluster.
//
// The suite pins down what parley.Broker leaves to the implementation:
// batches from one publisher to one node arrive in publish order, with
// every field intact; a batch for a node that is not attached (or has
// closed) is reported to the publisher's Gone hook and reaches nobody; a
// handler that is slow holds back later batches but loses none.
func RunBrokerTests(t *testing.T, newCluster NewClusterFunc) {
	tests := []struct {
		name string
		run  func(t *testing.T, newBroker NewBrokerFunc)
	}{
		{"RoundTrip", testBrokerRoundTrip},
		{"Order", testBrokerOrder},
		{"OnlyTheDestination", testBrokerOnlyDestination},
		{"Gone", testBrokerGone},
		{"SlowHandler", testBrokerSlowHandler},
		{"AllToAll", testBrokerAllToAll},
		{"Closed", testBrokerClosed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, newCluster(t)) })
	}
}

// Inbox is a BatchHandler that keeps what it gets.
type Inbox struct {
	mu      sync.Mutex // guards batches
	batches []parley.Batch
	got     chan struct{}
}

// NewInbox returns an empty inbox.
func NewInbox() *Inbox { return &Inbox{got: make(chan struct{}, 1)} }

// Handle is the BatchHandler.
func (in *Inbox) Handle(b parley.Batch) {
	in.mu.Lock()
	in.batches = append(in.batches, b)
	in.mu.Unlock()
	select {
	case in.got <- struct{}{}:
	default:
	}
}

// Batches returns a copy of what arrived so far.
func (in *Inbox) Batches() []parley.Batch {
	in.mu.Lock()
	defer in.mu.Unlock()
	return append([]parley.Batch(nil), in.batches...)
}

// WaitFor waits until the inbox holds n batches, or fails the test after
// timeout.
func (in *Inbox) WaitFor(t testing.TB, n int, timeout time.Duration) []parley.Batch {
	t.Helper()
	deadline := time.After(timeout)
	for {
		if b := in.Batches(); len(b) >= n {
			return b
		}
		select {
		case <-in.got:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("got %d batches, want %d", len(in.Batches()), n)
		}
	}
}

// MessageBatch returns a batch carrying message seq of room to node.
func MessageBatch(node, room string, seq int64, recipients ...string) parley.Batch {
	now := parley.Now()
	return parley.Batch{
		Node: node,
		Event: parley.Event{
			Kind: parley.EventMessage,
			Room: parley.Room{ID: room, Kind: parley.KindGroup, LastSeq: seq, LastActivityAt: now},
			Message: parley.Message{ID: parley.NewID(), RoomID: room, Seq: seq, SenderID: "sender",
				SenderName: "Sender", Body: fmt.Sprintf("message %d", seq), SentAt: now},
			UserID: "sender",
		},
		Recipients: recipients,
	}
}

// MustPublish publishes b or fails the test.
func MustPublish(t testing.TB, br parley.Broker, b parley.Batch) {
	t.Helper()
	if err := br.Publish(context.Background(), b); err != nil {
		t.Fatalf("Publish(to %s, seq %d) error = %v", b.Node, b.Event.Message.Seq, err)
	}
}

// WaitReady waits until br.Ping succeeds.
func WaitReady(t testing.TB, br parley.Broker) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := br.Ping(context.Background())
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("broker not ready: %v", err)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func ignoreGone(string) {}

func testBrokerRoundTrip(t *testing.T, newBroker NewBrokerFunc) {
	in := NewInbox()
	a := newBroker("a", BrokerHooks{Handler: NewInbox().Handle, Gone: ignoreGone})
	b := newBroker("b", BrokerHooks{Handler: in.Handle, Gone: ignoreGone})
	WaitReady(t, a)
	WaitReady(t, b) // until b's queue is bound, a's batches would come back as gone
	want := MessageBatch("b", "room1", 7, "u1", "u2")
	want.Event.Message.ClientID = "c1"
	MustPublish(t, a, want)
	got := in.WaitFor(t, 1, 30*time.Second)[0]
	if got.ID == "" {
		t.Errorf("delivered batch has no ID")
	}
	g, w := got.Event, want.Event
	if got.Node != "b" || g.Kind != w.Kind || g.UserID != w.UserID || g.Room.ID != w.Room.ID ||
		g.Room.LastSeq != w.Room.LastSeq || !g.Room.LastActivityAt.Equal(w.Room.LastActivityAt) ||
		g.Message.ID != w.Message.ID || g.Message.Seq != w.Message.Seq || g.Message.Body != w.Message.Body ||
		g.Message.SenderName != w.Message.SenderName || g.Message.ClientID != w.Message.ClientID ||
		!g.Message.SentAt.Equal(w.Message.SentAt) || fmt.Sprint(got.Recipients) != fmt.Sprint(want.Recipients) {
		t.Errorf("delivered %+v, want %+v", got, want)
	}
}

func testBrokerOrder(t *testing.T, newBroker NewBrokerFunc) {
	const n = 500
	in := NewInbox()
	a := newBroker("a", BrokerHooks{Handler: NewInbox().Handle, Gone: ignoreGone})
	b := newBroker("b", BrokerHooks{Handler: in.Handle, Gone: ignoreGone})
	WaitReady(t, a)
	WaitReady(t, b) // until b's queue is bound, a's batches would come back as gone
	for i := range n {
		MustPublish(t, a, MessageBatch("b", "room1", int64(i+1), "u1"))
	}
	got := in.WaitFor(t, n, 30*time.Second)
	checkBatchSeqs(t, got, n)
}

// checkBatchSeqs checks that the batches carry seqs 1..n in order, allowing
// a redelivered batch only where it repeats an earlier one.
func checkBatchSeqs(t *testing.T, got []parley.Batch, n int) {
	t.Helper()
	next := int64(1)
	for _, b := range got {
		s := b.Event.Message.Seq
		switch {
		case s == next:
			next++
		case s < next: // a duplicate, allowed
		default:
			t.Fatalf("got seq %d, want %d (order broken or a batch lost)", s, next)
		}
	}
	if next != int64(n+1) {
		t.Errorf("got seqs up to %d, want %d", next-1, n)
	}
}

func testBrokerOnlyDestination(t *testing.T, newBroker NewBrokerFunc) {
	inB, inC := NewInbox(), NewInbox()
	a := newBroker("a", BrokerHooks{Handler: NewInbox().Handle, Gone: ignoreGone})
	b := newBroker("b", BrokerHooks{Handler: inB.Handle, Gone: ignoreGone})
	c := newBroker("c", BrokerHooks{Handler: inC.Handle, Gone: ignoreGone})
	WaitReady(t, a)
	WaitReady(t, b)
	WaitReady(t, c)
	MustPublish(t, a, MessageBatch("b", "room1", 1, "u1"))
	MustPublish(t, a, MessageBatch("c", "room1", 1, "u2"))
	inB.WaitFor(t, 1, 30*time.Second)
	inC.WaitFor(t, 1, 30*time.Second)
	time.Sleep(100 * time.Millisecond)
	if got := inB.Batches(); len(got) != 1 || got[0].Recipients[0] != "u1" {
		t.Errorf("node b got %+v, want only the batch for u1", got)
	}
	if got := inC.Batches(); len(got) != 1 || got[0].Recipients[0] != "u2" {
		t.Errorf("node c got %+v, want only the batch for u2", got)
	}
}

func testBrokerGone(t *testing.T, newBroker NewBrokerFunc) {
	gone := make(chan string, 16)
	a := newBroker("a", BrokerHooks{Handler: NewInbox().Handle, Gone: func(n string) { gone <- n }})
	in := NewInbox()
	b := newBroker("b", BrokerHooks{Handler: in.Handle, Gone: ignoreGone})
	WaitReady(t, a)
	WaitReady(t, b)
	MustPublish(t, a, MessageBatch("nobody", "room1", 1, "u1"))
	select {
	case n := <-gone:
		if n != "nobody" {
			t.Errorf("Gone(%q), want Gone(nobody)", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no Gone for a batch to a node that does not exist")
	}
	// A node that closed is gone too.
	if err := b.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	MustPublish(t, a, MessageBatch("b", "room1", 1, "u1"))
	select {
	case n := <-gone:
		if n != "b" {
			t.Errorf("Gone(%q), want Gone(b)", n)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("no Gone for a batch to a closed node")
	}
	if got := in.Batches(); len(got) != 0 {
		t.Errorf("closed node got %d batches", len(got))
	}
}

func testBrokerSlowHandler(t *testing.T, newBroker NewBrokerFunc) {
	const n = 300
	release := make(chan struct{})
	in := NewInbox()
	slow := func(b parley.Batch) {
		<-release
		in.Handle(b)
	}
	a := newBroker("a", BrokerHooks{Handler: NewInbox().Handle, Gone: ignoreGone})
	b := newBroker("b", BrokerHooks{Handler: slow, Gone: ignoreGone})
	WaitReady(t, a)
	WaitReady(t, b)
	for i := range n {
		MustPublish(t, a, MessageBatch("b", "room1", int64(i+1), "u1"))
	}
	time.Sleep(200 * time.Millisecond)
	close(release)
	checkBatchSeqs(t, in.WaitFor(t, n, 30*time.Second), n)
}

func testBrokerAllToAll(t *testing.T, newBroker NewBrokerFunc) {
	const perPair = 100
	nodes := []string{"a", "b", "c"}
	inboxes := map[string]*Inbox{}
	brokers := map[string]parley.Broker{}
	for _, n := range nodes {
		inboxes[n] = NewInbox()
		brokers[n] = newBroker(n, BrokerHooks{Handler: inboxes[n].Handle, Gone: ignoreGone})
	}
	for _, n := range nodes {
		WaitReady(t, brokers[n])
	}
	var wg sync.WaitGroup
	for _, from := range nodes {
		wg.Go(func() {
			for i := range perPair {
				for _, to := range nodes {
					if to != from {
						// Each sender has its own room, so order is per room.
						MustPublish(t, brokers[from], MessageBatch(to, "from-"+from, int64(i+1), "u"))
					}
				}
			}
		})
	}
	wg.Wait()
	for _, to := range nodes {
		got := inboxes[to].WaitFor(t, perPair*(len(nodes)-1), 30*time.Second)
		byRoom := map[string][]parley.Batch{}
		for _, b := range got {
			byRoom[b.Event.Room.ID] = append(byRoom[b.Event.Room.ID], b)
		}
		for _, from := range nodes {
			if from != to {
				checkBatchSeqs(t, byRoom["from-"+from], perPair)
			}
		}
	}
}

func testBrokerClosed(t *testing.T, newBroker NewBrokerFunc) {
	a := newBroker("a", BrokerHooks{Handler: NewInbox().Handle, Gone: ignoreGone})
	WaitReady(t, a)
	if err := a.Publish(context.Background(), parley.Batch{Event: parley.Event{Kind: parley.EventMessage}}); parley.ErrorCode(err) != parley.CodeInvalid {
		t.Errorf("Publish(no node) error = %v, want code %s", err, parley.CodeInvalid)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	if err := a.Publish(context.Background(), MessageBatch("b", "r", 1)); parley.ErrorCode(err) != parley.CodeUnavailable {
		t.Errorf("Publish after Close error = %v, want code %s", err, parley.CodeUnavailable)
	}
	if err := a.Ping(context.Background()); parley.ErrorCode(err) != parley.CodeUnavailable {
		t.Errorf("Ping after Close error = %v, want code %s", err, parley.CodeUnavailable)
	}
}
