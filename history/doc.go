// Package history wraps a parley.Store with an in-memory cache of the older
// pages of rooms' histories, the pages past the newest ones that the cache
// and redis packages keep (seed 001's history paging).
//
// Seqs are contiguous, so a full block of BlockSize messages (seqs
// k·BlockSize+1 to (k+1)·BlockSize) read once holds them for good, except
// that an edit or a deletion changes one: Apply, fed this node's commits
// and the changes other nodes relay, forgets the block that holds it
// (changes.go). That is the only coordination it needs, as correct in
// front of a PostgreSQL shared by a cluster as in front of SQLite. A page whose seqs
// lie in full blocks is answered from memory; any other page (the newest,
// one reaching past the last full block, an unknown room) goes to the
// inner store, as do all other methods.
//
// A block is read only once the room's last seq (Store.Room, which the
// cache and redis packages serve without the database) shows it full, so a
// page near the newest end costs the inner store no more than it did
// without this cache. Blocks are kept newest first, so that a newest-first
// page inside one block is a shared sub-slice (read-only, as parley.Store
// results are). The memory they take is bounded by Config.MaxBytes (an
// estimate per message: its strings plus a fixed overhead); past it the
// least recently used block goes. Concurrent misses of one block wait for
// one load.
package history
