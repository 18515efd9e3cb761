// Package postgres is the parley.Store on PostgreSQL: the shared store of a
// cluster, where several Parley nodes write to one database at once.
//
// # Writes
//
// Every write (CreateUser, CreateToken, CreateRoom, Join, Leave, Send,
// MarkRead) is handed to one of the node's group-commit writers (package
// groupcommit; Config.Writers of them, the writes of one room always to the
// same one). A writer takes everything waiting, up to Config.MaxBatch
// writes, and runs them in one transaction sent as one pipeline: BEGIN, a
// statement that locks the rooms the batch changes, then the writes in
// order, then COMMIT. One round trip and one commit for the whole batch,
// so that a room's lock is held for the statements and the commit's WAL
// flush only, not for a round trip to the node.
//
// Each write is a single statement that reports a logical failure
// (name_taken, room_full, not_found, a repeated client_id) in its result
// row instead of raising an error, so that it fails that write only. A run
// of sends among other writes is one set-based statement: one INSERT of
// all its messages, one UPDATE of each room. A batch of sends only (at
// least 16), the usual batch under load, takes a path of its own
// (sendbatch.go): the rooms locked and read, the members and client ids
// read, then the seqs worked out in Go and written by one multi-row INSERT
// and one UPDATE each of the rooms and the read positions, sent with the
// COMMIT; two round trips, and about half the database's CPU of the
// set-based statement.
// After the commit, Config.OnCommit gets the batch's events, then the
// writes return; the batches of the node's writers reach OnCommit in
// commit order.
//
// # Several nodes
//
// Each node has its own writers, each with its own transactions;
// PostgreSQL keeps them all apart:
//
//   - The batch first locks, with SELECT ... ORDER BY id FOR NO KEY
//     UPDATE, the row of every existing room it changes (a message, a join,
//     a leave, a read position), in id order. Two batches that share rooms
//     lock them in the same order, so they queue instead of deadlocking,
//     and while a batch holds a room no other node changes its seq, its
//     members or its messages. Under READ COMMITTED each later statement
//     reads what was committed before it, so a check of the batch (is the
//     room full, is the user a member, was this client_id used) and the
//     write after it cannot be separated by another node's commit.
//   - A message's seq is assigned by "UPDATE rooms SET last_seq =
//     last_seq + 1 ... RETURNING" in the same statement as its INSERT (a
//     run of sends: last_seq + row_number() over the room's sends, and
//     one UPDATE of last_seq to the highest), under the room's lock; a
//     join adds the member only by "UPDATE rooms SET member_count =
//     member_count + 1 WHERE ... (capacity = 0 OR member_count <
//     capacity)", and a CHECK constraint backs it.
//   - A repeated client_id is found by the unique index (room_id,
//     sender_id, client_id), also when another node wrote the original.
//   - What no room lock covers (a user name, a token, the direct room of a
//     pair) is decided by a unique index: INSERT ... ON CONFLICT DO NOTHING
//     where the outcome is a logical failure, or, when another node wins a
//     race, a unique violation (SQLSTATE 23505) that makes the batch run
//     again and find the other node's row. A deadlock (40P01) or
//     serialization failure (40001) also runs the batch again, after a
//     short random pause. Errors are told apart by SQLSTATE, never by text.
//
// # Reads
//
// Reads run on the connection pool (Config.MaxConns) and see every
// committed write of every node.
//
// Statements are prepared and cached per connection (pgx's default), so a
// pooler between the store and PostgreSQL must keep sessions (PgBouncer's
// session mode, not its transaction mode).
//
// # Schema
//
// The schema is in migrations/*.sql, embedded and applied at Open in
// version order, each version once, recorded in schema_migrations. Open
// holds a session advisory lock while it migrates, so that nodes starting
// together apply each migration once. The store lives in the first schema
// of the connection's search_path (set it with search_path=... in the URL).
// Times are timestamptz, at the microsecond precision of parley.Now, and
// are returned in UTC.
//
// # Metrics
//
// parley_store_queries_total{kind} counts every statement sent to
// PostgreSQL (Store.Queries is its sum), parley_store_batch_size the writes
// per transaction, parley_store_commit_seconds the time of each batch and
// parley_store_batch_retries_total the batches run again.
// parley_store_full_total counts the writes refused for a full disk and
// parley_store_full is 1 while they are (as in package sqlite).
//
// # Outages and a full disk
//
// While PostgreSQL cannot be reached, writes and reads fail with
// CodeUnavailable; the outage is logged once when it starts and once when a
// call reaches the store again (outage.go). A write that fails with
// disk_full (SQLSTATE 53100) was rolled back: it fails with CodeUnavailable,
// "the server's storage is full", to be sent again with the same client-id,
// logged once when it starts and once at the first write committed 5 s
// after the last refusal, and shown by Store.StorageFull.
package postgres
