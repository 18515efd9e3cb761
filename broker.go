package parley

import "context"

// Batch is one committed change on its way to one node of a cluster, with
// the users on that node it is for. A message to a room whose members sit on
// three nodes travels as at most two batches from the node that committed
// it, one per other node, never one per recipient (seed 002).
type Batch struct {
	// ID identifies the batch; the broker sets it when empty. A batch sent
	// again after a reconnect keeps its ID.
	ID string `json:"id"`
	// Node is the destination node id.
	Node string `json:"node"`
	// Event is the committed change: an EventMessage (Event.Message is the
	// message), or an EventJoin or EventLeave that the destination applies
	// to its local subscriptions and caches.
	Event Event `json:"event"`
	// Recipients are the users of the message with a session on Node.
	Recipients []string `json:"recipients,omitempty"`
}

// BatchHandler receives the batches addressed to a node, one at a time, in
// the order each sender published them (batches of different senders
// interleave in any order). The broker acknowledges a batch after the
// handler returns, so the handler hands it over (to the local fan-out) and
// returns promptly; it must not block on a client. The same batch may arrive
// more than once: a receiver drops duplicate messages by (room, seq).
type BatchHandler func(Batch)

// Broker carries batches between the nodes of a cluster (design §6). Each
// node has one Broker, made with its node id, a BatchHandler for the batches
// addressed to it and a hook for destinations that are gone (see the
// implementations' configs). Single-node mode needs none: every recipient is
// local.
//
// Delivery is at least once while the destination exists: a batch that the
// broker has not confirmed when the connection drops is sent again after the
// reconnect. A batch addressed to a node that has no queue (it is gone) is
// dropped and reported to the gone hook, never delivered elsewhere.
//
// All methods are safe for concurrent use.
type Broker interface {
	// Publish queues b for its destination and returns without waiting for
	// the broker; the batch is sent in the order of Publish calls and kept
	// until the broker confirms it. While the broker is unreachable,
	// batches wait (up to a bound) and go out after the reconnect. Fails
	// with CodeInvalid when b.Node is empty, and with CodeUnavailable after
	// Close or when the bound of waiting batches is reached (the batch is
	// dropped; receivers see a seq gap and fill it from the store).
	Publish(ctx context.Context, b Batch) error
	// Ping reports whether the broker is connected now. Fails with
	// CodeUnavailable when it is not.
	Ping(ctx context.Context) error
	// Close stops consuming, waits a short while for unconfirmed batches,
	// and releases the connection. This node's queue is removed, so that
	// batches still addressed to it come back as gone.
	Close() error
}
