package rabbitmq_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	amqp "github.com/rabbitmq/amqp091-go"

	"parley"
	"parley/parleytest"
	"parley/rabbitmq"
)

// closeConnections force-closes the RabbitMQ connections of a node, the way
// an operator (or a network failure) would, and returns how many it closed.
func closeConnections(t *testing.T, node string) int {
	t.Helper()
	out, err := exec.Command("rabbitmqctl", "list_connections", "-q", "--no-table-headers",
		"pid", "client_properties").CombinedOutput()
	if err != nil {
		t.Skipf("rabbitmqctl list_connections: %v: %s", err, out)
	}
	n := 0
	for line := range strings.Lines(string(out)) {
		pid, props, ok := strings.Cut(strings.TrimSpace(line), "\t")
		if !ok || !strings.Contains(props, `"parley node `+node+`"`) {
			continue
		}
		if out, err := exec.Command("rabbitmqctl", "close_connection", pid, "parley test").CombinedOutput(); err != nil {
			t.Fatalf("rabbitmqctl close_connection: %v: %s", err, out)
		}
		n++
	}
	return n
}

// queueCounts returns the ready and unacknowledged messages of a queue.
func queueCounts(t *testing.T, url, queue string) (ready, unacked int) {
	t.Helper()
	out, err := exec.Command("rabbitmqctl", "list_queues", "-q", "--no-table-headers", "-p", vhost(t, url),
		"name", "messages_ready", "messages_unacknowledged").CombinedOutput()
	if err != nil {
		t.Skipf("rabbitmqctl list_queues: %v: %s", err, out)
	}
	for line := range strings.Lines(string(out)) {
		var name string
		if _, err := fmt.Sscan(line, &name, &ready, &unacked); err == nil && name == queue {
			return ready, unacked
		}
	}
	t.Fatalf("queue %s not listed", queue)
	return 0, 0
}

func vhost(t *testing.T, url string) string {
	u, err := amqp.ParseURI(url)
	if err != nil {
		t.Fatal(err)
	}
	return u.Vhost
}

// TestPrefetchAndManualAck: with a handler that does not return, the queue
// holds exactly Prefetch unacknowledged deliveries and keeps the rest ready;
// once released, every batch is handled and acknowledged.
func TestPrefetchAndManualAck(t *testing.T) {
	url := amqpURL(t)
	exchange := tempExchange(t, url)
	const prefetch, n = 16, 100
	release := make(chan struct{})
	in := parleytest.NewInbox()
	a := mustNew(t, rabbitmq.Config{URL: url, Node: "a", Exchange: exchange, Handler: in.Handle})
	b := mustNew(t, rabbitmq.Config{URL: url, Node: "b", Exchange: exchange, Prefetch: prefetch,
		Handler: func(b parley.Batch) { <-release; in.Handle(b) }})
	parleytest.WaitReady(t, a)
	parleytest.WaitReady(t, b) // until b's queue is bound, a's batches would come back as gone
	for i := range n {
		parleytest.MustPublish(t, a, parleytest.MessageBatch("b", "r", int64(i+1)))
	}
	queue := rabbitmq.QueueName(exchange, "b")
	var ready, unacked int
	if !parleytest.Poll(10*time.Second, func() bool {
		ready, unacked = queueCounts(t, url, queue)
		return ready == n-prefetch && unacked == prefetch
	}) {
		t.Fatalf("queue %s has %d ready, %d unacknowledged; want %d, %d", queue, ready, unacked, n-prefetch, prefetch)
	}
	close(release)
	in.WaitFor(t, n, 10*time.Second)
	if !parleytest.Poll(10*time.Second, func() bool {
		ready, unacked = queueCounts(t, url, queue)
		return ready == 0 && unacked == 0
	}) {
		t.Fatalf("after handling: %d ready, %d unacknowledged; want 0, 0", ready, unacked)
	}
}

// TestReconnectRepublish force-closes both nodes' connections while batches
// flow: both reconnect, every batch arrives (duplicates allowed, never a
// loss) and the receiver sees each seq in order once duplicates are dropped.
func TestReconnectRepublish(t *testing.T) {
	// Node names are unique per run: closeConnections finds connections
	// by name across the whole RabbitMQ server, which other runs share.
	ra, rb := "ra-"+parley.NewID()[:8], "rb-"+parley.NewID()[:8]
	url := amqpURL(t)
	exchange := tempExchange(t, url)
	const n = 3000
	in := parleytest.NewInbox()
	a := mustNew(t, rabbitmq.Config{URL: url, Node: ra, Exchange: exchange, Handler: in.Handle})
	b := mustNew(t, rabbitmq.Config{URL: url, Node: rb, Exchange: exchange, Handler: in.Handle})
	parleytest.WaitReady(t, a)
	parleytest.WaitReady(t, b)

	var published atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := range n {
			parleytest.MustPublish(t, a, parleytest.MessageBatch(rb, "r", int64(i+1)))
			published.Add(1)
			time.Sleep(time.Millisecond)
		}
	})
	parleytest.Eventually(t, time.Minute, func() bool { return published.Load() >= n/4 }, "the publisher never reached %d batches", n/4)
	if closeConnections(t, ra) == 0 {
		t.Fatalf("no connection of node ra found")
	}
	parleytest.Eventually(t, time.Minute, func() bool { return published.Load() >= n/2 }, "the publisher never reached %d batches", n/2)
	if closeConnections(t, rb) == 0 {
		t.Fatalf("no connection of node rb found")
	}
	wg.Wait()
	// Duplicates count as batches: wait for every seq, not for n batches.
	var got []parley.Batch
	next, dups := int64(1), 0
	for deadline := time.Now().Add(60 * time.Second); ; {
		got = in.Batches()
		// Keep the first sighting of each seq, as a receiver does.
		seen := map[int64]bool{}
		next, dups = 1, 0
		for _, batch := range got {
			s := batch.Event.Message.Seq
			switch {
			case seen[s]:
				dups++
			case s == next:
				seen[s] = true
				next++
			default:
				t.Fatalf("seq %d arrived before %d", s, next)
			}
		}
		if next == n+1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("got seqs up to %d, want %d", next-1, n)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("%d batches, %d duplicates after two forced disconnects", n, dups)
	parleytest.WaitReady(t, a)
	parleytest.WaitReady(t, b)
	if err := a.Publish(context.Background(), parleytest.MessageBatch(rb, "r", n+1)); err != nil {
		t.Fatalf("Publish after reconnect: %v", err)
	}
	in.WaitFor(t, len(got)+1, 10*time.Second)
}

// TestQueueExpiresWhenNodeGone: a node that dies without closing its
// broker leaves its queue behind; the queue expires after QueueExpiry, and
// from then on a batch for that node comes back as gone.
func TestQueueExpiresWhenNodeGone(t *testing.T) {
	url := amqpURL(t)
	exchange := tempExchange(t, url)
	dead, live := "dead-"+parley.NewID()[:8], "live-"+parley.NewID()[:8]
	// A reconnect pause far longer than the test: once its connection is
	// cut, the node stays away like a crashed one.
	b := mustNew(t, rabbitmq.Config{URL: url, Node: dead, Exchange: exchange, Handler: parleytest.NewInbox().Handle,
		QueueExpiry: 500 * time.Millisecond, MinBackoff: time.Minute, MaxBackoff: time.Minute})
	gone := make(chan string, 16)
	a := mustNew(t, rabbitmq.Config{URL: url, Node: live, Exchange: exchange, Handler: parleytest.NewInbox().Handle,
		Gone: func(node string) { gone <- node }})
	parleytest.WaitReady(t, a)
	parleytest.WaitReady(t, b)
	if closeConnections(t, dead) == 0 {
		t.Fatalf("no connection of node %s found", dead)
	}
	deadline := time.After(20 * time.Second)
	for seq := int64(1); ; seq++ {
		parleytest.MustPublish(t, a, parleytest.MessageBatch(dead, "r", seq))
		select {
		case node := <-gone:
			if node != dead {
				t.Fatalf("gone hook heard %q, want %q", node, dead)
			}
			return
		case <-deadline:
			t.Fatalf("the queue of %s did not expire within 20 s (QueueExpiry 500 ms)", dead)
		case <-time.After(200 * time.Millisecond):
		}
	}
}
