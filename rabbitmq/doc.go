// Package rabbitmq is the parley.Broker on RabbitMQ (design §6): the
// batches of a committed change travel from the node that committed it to
// the other nodes holding its recipients, one publish per destination node
// (seed 002), through a durable direct exchange and one queue per node.
//
// Invariants: a batch is published with confirms and sent again until
// acknowledged (so a receiver may see it twice); a delivery is
// acknowledged only once the handler returned; a batch no queue takes is
// reported to Config.Gone; past Config.MaxPending, Publish fails with
// CodeUnavailable.
//
// It imports only the domain package. docs/architecture.md ("rabbitmq")
// has the topology, publishing, consuming and reconnecting.
package rabbitmq
