// Package sqlite is the embedded parley.Store: one SQLite database file in
// WAL mode, the default store of a single Parley node.
//
// Its 15 writes (CreateUser, CreateToken, RevokeToken, RevokeUserTokens,
// CreateRoom, UpdateRoom, Join, Leave, RemoveMember, SetRole, Unban, Send,
// EditMessage, DeleteMessage, MarkRead) go to one group-commit writer
// (package groupcommit) that runs each batch in one transaction; reads,
// search (FTS5) and the changes since a seq (Changed) use a pool of
// query-only connections. Config.Sync sets the durability, Migrate and
// Open apply the embedded schema, StorageFull reports a full disk.
//
// Invariants: a write that returned is committed (and, with Sync full,
// fsynced); a logical failure fails that write only; Config.OnCommit gets
// each batch's events in commit order before its writes return.
//
// It imports the domain package, groupcommit and schema, and no other
// backend. docs/architecture.md ("sqlite") has the design: batches,
// durability, checkpoints, a full disk, the driver.
package sqlite
