// Package rabbitmq is the parley.Broker on RabbitMQ (design §6): the batches
// of a committed message travel from the node that committed it to the
// other nodes holding its recipients, one publish per destination node
// (seed 002).
//
// # Topology
//
// A durable direct exchange, Config.Exchange ("parley"). Each node consumes
// its own queue "{exchange}.node.{id}", bound with routing key "node.{id}".
// The queue is not exclusive, so it outlives a lost connection and keeps
// what arrives while the node reconnects, but it carries x-expires
// (Config.QueueExpiry): once its node has been gone that long, RabbitMQ
// deletes it. Close deletes it at once.
//
// # Publishing
//
// One AMQP connection per node, with a publishing channel in confirm mode
// and a consuming channel. Publish encodes the batch (JSON) and queues it in
// memory; the publisher goroutine sends everything queued, each batch with
// mandatory set and its batch id as the AMQP message-id, and keeps it as
// unconfirmed under its delivery tag. The confirmer goroutine reads basic.ack
// and basic.nack: an ack settles the batch, a nack queues it again. A batch
// that no queue is bound for comes back as basic.return before its ack;
// the confirmer matches the return to its batch by message-id and, at the
// ack, reports the destination to Config.Gone (the node is gone: its
// presence entries should be dropped) instead of sending it again.
//
// # Consuming
//
// The consuming channel has a prefetch of Config.Prefetch unacknowledged
// deliveries. Each delivery is decoded and handed to Config.Handler, then
// acknowledged, one at a time in queue order: a batch is acknowledged only
// once it is in the hands of the local fan-out.
//
// # Reconnecting
//
// When the connection or a channel closes, the session ends: the batches
// not yet confirmed go back to the front of the queue, in their original
// order, and the broker reconnects with exponential backoff (Config.
// MinBackoff to MaxBackoff, with jitter). After the reconnect they are sent
// again, so a receiver may see a batch twice and drops it by (room, seq).
// Batches published while disconnected wait in memory, up to
// Config.MaxPending; past that Publish fails with CodeUnavailable and the
// batch is counted as dropped (receivers see a seq gap and fill it from the
// store).
//
// # Locks and goroutines
//
// Broker.mu guards the queue and the unconfirmed set. The run goroutine
// (started by New, stopped by Close) owns the connection; each session adds
// a publisher, a confirmer and a consumer goroutine, all ended with the
// session.
package rabbitmq
