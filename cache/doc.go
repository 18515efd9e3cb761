// Package cache wraps any parley.Store with an in-memory view of its hot
// reads (seeds 001 and 004): the room list, "open chat" (room info, last
// message, newest page), members for the hub, users and tokens, and an
// in-memory index for searching the rooms it holds. Writes pass through.
//
// Invariants: the cached state changes only by Apply (the inner store's
// OnCommit sink, so a caller reads its own writes) and by lazy loads
// reconciled with Apply through a per-key backlog; memory is bounded by
// Config's caps, and eviction never serves stale data; some results are
// shared and must not be modified. Correct only when every write of the
// inner store reaches Apply (one node).
//
// It imports only the domain package. docs/architecture.md ("cache") has
// the design; LOCKS.md the order of its locks.
package cache
