// Package parley is the vocabulary of the Parley chat server: users, rooms,
// members and messages (with their edits and deletions), search queries
// and cursors, the error type every transport maps to its wire, committed
// events and their sinks, and the contracts that have several
// implementations: the durable Store, the Broker between nodes and the
// Presence of users on nodes.
//
// It imports nothing from the project and no driver. Concrete types live in
// packages named after what they wrap (sqlite, cache, rest, ...) and are wired
// together only in cmd/parley.
package parley
