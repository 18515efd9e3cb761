// Package cluster relays committed changes between the nodes of a Parley
// cluster (design §6). Relay is the parley.EventSink of cluster mode: for
// each commit of this node it delivers to the local fan-out at once
// (Config.Local, Config.Events) and publishes one parley.Batch per other
// node that holds online recipients, once the shared hot data holds the
// commit; it hands the batches other nodes send to the local fan-out
// (Receive). Typing and read signals travel the same way (Signal).
//
// Invariants: every node delivers each room's messages in seq order, each
// once; a gap (a lost or never sent batch) is filled from the store, found
// by the room's head (Config.Heads) when no later message reveals it; when
// presence cannot be read, a message goes to every known node.
//
// It imports only the domain package: the local fan-out, the store, the
// heads and the hot data's mark come in its Config, the broker and
// presence at Start. docs/architecture.md ("cluster") has the design.
package cluster
