// Package hub fans committed messages out to the local subscribers of this
// node: the subscribers of a room's topic and the personal message queue of
// every member of the room. A subscriber is a Receiver (the gateway's
// session); Apply (a parley.EventSink) takes this node's commits, Deliver
// a message whose recipients are known (cluster mode). Room events
// (member, typing, read, presence, edited, deleted) are not messages:
// package roomevents fans them out, beside the hub with its own queue.
//
// Invariants: Apply never blocks (one unbounded queue, one dispatch
// goroutine); every receiver sees each room's messages in seq order, and
// a resumed subscription (Subscribe, then Start) sees no gap and no
// duplicate; Receiver methods run under Hub.mu and must not call back.
//
// It imports the domain package and subindex (the subscription index it
// shares in kind with roomevents), not roomevents, its peer.
// docs/architecture.md ("hub") has the design.
package hub
