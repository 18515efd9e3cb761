// Package roomevents fans room events out to this node's event
// subscribers (design §4 "Room events"): member, typing, read, online and
// offline, edited and deleted events for the subscribers of
// /topic/rooms.{id}.events and of the personal /user/queue/events. They
// are not messages: nothing of them is stored, and they never share the
// messages' path (package hub).
//
// # Intake and dispatch
//
// Events has its own queue and its own dispatch goroutine, apart from the
// Hub's: a slow member lookup, a burst of typing or a presence storm never
// delays a message. Apply (a parley.EventSink, installed after the Hub's),
// ApplyRemote (the cluster relay's batches), Typing and PresenceChanged
// only append to the queue and return. The queue is bounded
// (Config.MaxQueue): past it an event is dropped, counted, and every
// event subscription is dropped as lagged (its client gets ERROR slow
// consumer and resubscribes), so that no client misses an event without
// learning it. Hand-offs to receivers never block: each session's
// outbound queue has its own bound and slow-consumer rule.
//
// Since that overflow reaches every subscriber of the node, what one user
// can put in the queue is bounded before it is queued: a typing signal
// within TypingEvery of the last one of its user and room is absorbed at
// the intake (Typing, ApplyRemote), and a user's presence change already
// waiting in the queue absorbs the next ones (the dispatcher restarts the
// quiet period once for both). A flood of signals from one client costs
// it a map lookup each and never fills the queue.
//
// The files follow the concepts: events.go (Config, New, Close),
// dispatch.go (the intake, the dispatch loop, the fan-out), subs.go (the
// subscriptions, in a subindex.Index shared in kind with the hub),
// typing.go, reads.go (read coalescing), presence.go (online and offline,
// debounced), replay.go (edited and deleted, and resuming them after a
// since-change read), metrics.go.
//
// # Adding an event kind
//
// A committed change becomes an event in one place: Events.commit, one
// case per parley.EventKind, which builds the RoomEvent and calls
// toRoom with its recipients (the room's event subscribers, and the
// personal event queues of its members). A new kind is one more case
// there (edited and deleted are: replay.go); to reach other nodes in
// cluster mode, the cluster relay must also carry it (Relay.Apply's
// filter, and the cases of Relay.local and Relay.receive).
//
// # Locks
//
// Events.mu guards the subscriptions; Receiver methods run under it,
// so it is taken before a session's lock and receivers must not call back
// into Events. Events.qmu guards the queue and is a leaf but for
// Events.pmu (the member listing's presence) taken under it; Events.tmu,
// the typing throttle's, is a leaf (released before qmu is taken).
//
// # Imports
//
// It imports the domain package and subindex of the project, nothing
// else: not hub, its peer (layout_test.go holds it to that).
package roomevents
