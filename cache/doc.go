// Package cache wraps any parley.Store with an in-memory view of its hot
// reads, so that the room list, "open chat" (room info, last message, newest
// page) and the fan-out hub's member lookups touch the database only on the
// first read (seeds 001 and 004).
//
// Writes pass through to the inner store. The cached state changes only in
// two ways: Apply, which the wiring installs as the inner store's OnCommit
// sink and so sees every committed change in commit order before the write
// returns to its caller, and lazy loads of a key on a miss. A caller that
// gets a result from a write and then reads through the cache therefore sees
// its write.
//
// # Loads racing with Apply
//
// A load reads a key from the inner store without holding the cache lock, so
// events for that key may be applied while it runs, and its snapshot may be
// older than them. Each key (a room, a user) counts the loads in flight; while
// the count is above zero Apply also appends the key's events to a backlog.
// When the load returns it replays the backlog entries that arrived since it
// began on top of its snapshot and installs the result, unless the part is
// cached already (another load or an event filled it, and events have kept it
// current since). Events carry absolute state (the room after the change, the
// member's read position), and replay is idempotent (a join of a member, a
// message at or below the window's top, change nothing twice), so replaying
// an event the snapshot already includes is harmless. We chose the backlog
// over per-key generations because a generation check must throw away a load
// that an event overtook, and in a busy room every load would be overtaken:
// the key would never get cached. A miss answers its caller from the inner
// store's snapshot, or from the cache once warmed; either is at least as new
// as any write that returned before the read began.
//
// # Memory
//
// Each room keeps at most Config.RecentMessages messages (in an array of at
// most about twice that). The number of rooms (info, member ids, recent
// window), users (account, memberships and the room list's sorted order) and
// tokens is capped by Config.MaxRooms, MaxUsers and MaxTokens; past the cap a
// whole key is evicted, chosen by a clock sweep (a key read since the last
// sweep gets a second chance) and never one with a load in flight. An evicted
// key is simply absent: the next read loads it afresh and events for it are
// ignored (a room's info is re-inserted from an event, which carries all of
// it), so eviction never serves stale data. What grows within those caps: a
// cached user's membership set and room order grow with the rooms they are
// in, and a room's member id set with its members. A key's backlog holds the
// events that arrive during its loads, at most 4096; a load that outlasts
// more does not install its snapshot.
//
// # Shared results
//
// To keep the hot reads free of copies, some results are shared by every
// caller and must not be modified: the id slice from Members, a newest-first
// page from Messages, and the Message behind each RoomEntry.LastMessage from
// Rooms. The cache never changes them either: a change makes a new slice or
// array. (Their capacity is clipped, so an append copies.)
//
// # Limits
//
// The cache is correct only if every write of the inner store reaches Apply:
// several nodes sharing one database need a shared cache instead. A join
// event does not carry the member's join time, so the first Member or
// Memberships read after a join asks the inner store for it; the room list
// and Members need no such read.
package cache
