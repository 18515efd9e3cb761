// Package roomevents fans room events out to this node's event
// subscribers (design §4 "Room events"): member, typing, read, online and
// offline, edited and deleted events for the subscribers of
// /topic/rooms.{id}.events and of the personal /user/queue/events, and
// mention events (mentions.go) for the personal queue only.
// Events takes them from the store's commits (Apply), from other nodes
// (ApplyRemote), from sessions (Typing) and from presence
// (PresenceChanged).
//
// Invariants: nothing of an event is stored, and events never share the
// messages' path (package hub), so no burst of them delays a message; the
// queue is bounded (Config.MaxQueue), and past it every event subscription
// is dropped as lagged rather than miss an event silently; one user's
// typing and presence are absorbed at the intake; a committed change
// becomes an event in one place, Events.commit.
//
// It imports the domain package and subindex of the project, nothing
// else: not hub, its peer (layout_test.go holds it to that).
// docs/architecture.md ("roomevents") has the design.
package roomevents
