package rabbitmq_test

import (
	"sync/atomic"
	"testing"

	"parley"
	"parley/parleytest"
	"parley/rabbitmq"
)

// TestCloseWaitsForGone: Close returns only after the Gone calls under
// way have returned (cluster mode's Gone drops the node's presence in
// Redis, whose client is closed after the broker).
func TestCloseWaitsForGone(t *testing.T) {
	url := amqpURL(t)
	exchange := tempExchange(t, url)
	entered := make(chan string, 16)
	release := make(chan struct{})
	var finished atomic.Int32
	b := mustNew(t, rabbitmq.Config{URL: url, Node: "live-" + parley.NewID()[:8], Exchange: exchange,
		Handler: parleytest.NewInbox().Handle,
		Gone: func(node string) {
			entered <- node
			<-release
			finished.Add(1)
		}})
	parleytest.WaitReady(t, b)
	nobody := "nobody-" + parley.NewID()[:8] // no queue: the batch comes back
	parleytest.MustPublish(t, b, parleytest.MessageBatch(nobody, "r", 1))
	if node := <-entered; node != nobody {
		t.Fatalf("Gone(%q), want Gone(%q)", node, nobody)
	}
	done := make(chan int32)
	go func() {
		b.Close()
		done <- finished.Load()
	}()
	<-b.RunDone()
	close(release)
	if got := <-done; got != 1 {
		t.Errorf("Gone calls returned when Close returned = %d, want 1", got)
	}
}
