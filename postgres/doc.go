// Package postgres is the parley.Store on PostgreSQL: the shared store of a
// cluster, where several Parley nodes write to one database at once.
//
// Its 15 writes (CreateUser, CreateToken, RevokeToken, RevokeUserTokens,
// CreateRoom, UpdateRoom, Join, Leave, RemoveMember, SetRole, Unban, Send,
// EditMessage, DeleteMessage, MarkRead) go to Config.Writers group-commit
// writers (package groupcommit; a room's writes always to the same one),
// each batch one pipelined transaction that first locks the rooms it
// changes. Reads, search and Changed run on the pool. Migrate and Open
// apply the embedded schema under an advisory lock; StorageFull reports a
// full disk. An unreachable server, or one a probe of its own finds not
// answering (Config.LivenessTimeout), is an outage: new calls fail as
// unavailable, logged at its start and end. The search indexer
// (indexer.go) gives messages their search vectors after the commit,
// woken by the node's own sends and, through LISTEN/NOTIFY, the other
// nodes'.
//
// Invariants: PostgreSQL's room locks and unique indexes keep the nodes'
// writes apart (seqs contiguous, capacity and client_id respected);
// errors are told apart by SQLSTATE, never by text; Config.OnCommit gets a
// node's batches in commit order.
//
// It imports the domain package, groupcommit and schema, and no other
// backend. docs/architecture.md ("postgres") has the design.
package postgres
