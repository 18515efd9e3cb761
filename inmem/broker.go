package inmem

import (
	"context"
	"sync"

	"parley"
)

// Exchange connects the in-process brokers of one cluster, like a RabbitMQ
// direct exchange with one queue per node.
type Exchange struct {
	mu    sync.Mutex // guards nodes
	nodes map[string]*Broker
}

// NewExchange returns an empty exchange.
func NewExchange() *Exchange { return &Exchange{nodes: map[string]*Broker{}} }

// BrokerConfig configures a Broker.
type BrokerConfig struct {
	// Node is this node's id (required).
	Node string
	// Handler receives the batches addressed to this node (required).
	Handler parley.BatchHandler
	// Gone, when set, hears about batches whose destination has no queue.
	Gone func(node string)
}

// Broker is one node's in-process parley.Broker. Batches to a node are
// handed to its handler by one goroutine, in publish order.
type Broker struct {
	ex  *Exchange
	cfg BrokerConfig

	mu      sync.Mutex // guards the following fields
	queue   []parley.Batch
	closed  bool
	wake    chan struct{}
	stopped chan struct{}
}

var _ parley.Broker = (*Broker)(nil)

// Broker attaches a node to the exchange and starts delivering to its
// handler. A node id already attached is replaced.
func (ex *Exchange) Broker(cfg BrokerConfig) *Broker {
	b := &Broker{ex: ex, cfg: cfg, wake: make(chan struct{}, 1), stopped: make(chan struct{})}
	ex.mu.Lock()
	ex.nodes[cfg.Node] = b
	ex.mu.Unlock()
	go b.run()
	return b
}

// Publish implements parley.Broker.
func (b *Broker) Publish(ctx context.Context, batch parley.Batch) error {
	if batch.Node == "" {
		return parley.Errorf(parley.CodeInvalid, "batch without a destination node")
	}
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return parley.Errorf(parley.CodeUnavailable, "broker closed")
	}
	if batch.ID == "" {
		batch.ID = parley.NewID()
	}
	batch.Recipients = append([]string(nil), batch.Recipients...)
	b.ex.mu.Lock()
	dst := b.ex.nodes[batch.Node]
	b.ex.mu.Unlock()
	if dst == nil || !dst.enqueue(batch) {
		if b.cfg.Gone != nil {
			go b.cfg.Gone(batch.Node)
		}
	}
	return nil
}

// enqueue queues a batch for b's handler; false if b is closed.
func (b *Broker) enqueue(batch parley.Batch) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return false
	}
	b.queue = append(b.queue, batch)
	select {
	case b.wake <- struct{}{}:
	default:
	}
	return true
}

// run hands queued batches to the handler until Close.
func (b *Broker) run() {
	defer close(b.stopped)
	for {
		b.mu.Lock()
		q, closed := b.queue, b.closed
		b.queue = nil
		b.mu.Unlock()
		if closed {
			return
		}
		for _, batch := range q {
			b.cfg.Handler(batch)
		}
		if len(q) == 0 {
			<-b.wake
		}
	}
}

// Ping implements parley.Broker; an in-process broker is always reachable
// until closed.
func (b *Broker) Ping(ctx context.Context) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return parley.Errorf(parley.CodeUnavailable, "broker closed")
	}
	return nil
}

// Close implements parley.Broker: the node leaves the exchange and batches
// still queued for it are dropped.
func (b *Broker) Close() error {
	b.ex.mu.Lock()
	if b.ex.nodes[b.cfg.Node] == b {
		delete(b.ex.nodes, b.cfg.Node)
	}
	b.ex.mu.Unlock()
	b.mu.Lock()
	if !b.closed {
		b.closed = true
		close(b.wake)
	}
	b.mu.Unlock()
	<-b.stopped
	return nil
}
