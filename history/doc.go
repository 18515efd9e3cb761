// Package history wraps a parley.Store with an in-memory cache of the older
// pages of rooms' histories, the pages past the newest ones that the cache
// and redis packages keep (seed 001's history paging).
//
// A full block of Config.BlockSize messages is read once and kept, least
// recently used first out past Config.MaxBytes; a page inside full blocks
// is served from memory, every other call goes to the inner store.
//
// Invariants: Apply (this node's commits, and the edits and deletions
// other nodes relay) forgets the block of every changed message, and with
// Config.Shared (cluster mode) every page is checked first against its
// room's change number (Room.LastChange, from the hot data), so a cached
// page is never staler than the hot data, in front of SQLite or a shared
// PostgreSQL, even when a relayed change never arrives (its node died
// after writing Redis, before publishing; one that died before writing
// Redis leaves the hot data itself stale until its keys' TTL); results
// are shared and must not be modified; concurrent misses of one block
// wait for one load.
//
// It imports only the domain package.
package history
