// Package hub fans committed messages out to the local subscribers of this
// node: the subscribers of a room's topic and the personal message queue of
// every member of the room. It knows nothing of STOMP or sockets: a
// subscriber is a Receiver, which the gateway implements with a bounded
// outbound queue per session.
//
// # Event intake
//
// The store calls Apply (a parley.EventSink) on its writer goroutine, in
// commit order. Apply never blocks: it appends the events to an unbounded
// in-memory queue, measured by the parley_hub_pending_events gauge, and one
// dispatch goroutine processes that queue in order. Unbounded is the
// deliberate choice: blocking would stall every commit behind one fan-out,
// and dropping would lose a message between the store and its subscribers,
// which design §5 forbids. The queue cannot grow faster than the store
// commits, and the dispatch goroutine's hand-offs to receivers never block,
// so in practice it stays near empty; the gauge shows it if it does not.
// The one wait of the dispatch goroutine is Members, for a room's members
// when personal queues are subscribed: the cache answers from memory once
// warm, and a miss reads the store, bounded by a 5 s timeout, after which
// every personal queue is dropped (Lagged) rather than guessed.
//
// Deliver is the same path for a message whose recipients are already known
// (cluster mode: a broker hands this node a message and its local
// recipients).
//
// # Order
//
// One goroutine dispatches every event in commit order, and Receiver.Deliver
// is called under the hub's lock, so every receiver sees each room's
// messages in seq order. A subscription starts buffering (see Subscribe) and
// Start merges its history with the buffer by seq, so a resumed subscriber
// sees no gap and no duplicate.
//
// Room events (member, typing, read, presence, edited and deleted) are not
// messages: package roomevents fans them out, beside the hub and with its
// own queue. Both keep their subscriptions in a subindex.Index.
//
// # Locks
//
// Hub.mu is taken before any receiver's lock: Receiver methods are called
// with Hub.mu held, so they must not call back into the Hub.
package hub
