// Package sqlite is the embedded parley.Store: one SQLite database file in
// WAL mode, the default store of a single Parley node.
//
// # Writes
//
// Every write (CreateUser, CreateToken, CreateRoom, Join, Leave, Send,
// MarkRead) is handed to one writer goroutine (package groupcommit) that owns
// the only write connection. It takes everything waiting, up to
// Config.MaxBatch writes, and runs them in order in one transaction: one
// commit, one fsync, for the whole batch. Consecutive Sends of a batch run as
// one group of multi-row statements (send.go). That is how a 2-core machine
// stores tens of thousands of messages a second with an fsync per commit.
//
// Each write checks its preconditions before it changes anything, so a
// logical failure (name_taken, room_full, not_found) fails that write only.
// A write that hits an unexpected constraint violation is dropped with an
// internal error and the rest of the batch runs again without it. A failed
// commit fails every write of the batch: nothing is reported as done that is
// not committed. Once the batch is durable, Config.OnCommit gets its events
// in commit order, then the writers return.
//
// A message's seq is assigned by UPDATE rooms SET last_seq = last_seq + n
// ... RETURNING in the same transaction as its INSERT, and a join by an
// UPDATE that adds the member only while member_count < capacity (the table
// also has CHECK constraints), so both stay right even without the single
// writer. A repeated client_id is found by the unique index
// (room_id, sender_id, client_id), which sees the earlier writes of the same
// batch, or within the batch's group of Sends.
//
// # Reads
//
// Reads use a pool of query-only connections (Config.Readers); WAL lets them
// run while the writer commits, and they see every committed write.
//
// # Durability (Config.Sync)
//
//   - full (the default): every commit's WAL pages are fsynced before any
//     write of the batch returns or its events reach OnCommit. A write that
//     returned survives a crash of the process, a crash of the OS and a
//     power loss (on a disk that honours fsync). The fsync (fdatasync on
//     Linux, walsync.go) runs on the group-commit writer right after its
//     commit while the disk syncs fast, else on the flusher while the
//     writer commits the next batch (the connection itself runs
//     synchronous=NORMAL), so a reader may see a
//     commit up to one fsync before it is durable; a power loss in that
//     window loses it, and it was never reported as done.
//   - normal: synchronous=NORMAL. Every commit is written to the WAL (the
//     OS holds it) but fsynced only at checkpoints. A write that returned
//     survives a crash of the process; an OS crash or a power loss may undo
//     the last commits before the latest checkpoint, and leaves the database
//     consistent.
//   - off: synchronous=OFF. SQLite never fsyncs. A write that returned
//     survives a crash of the process only; an OS crash or a power loss may
//     lose commits and may corrupt the database file.
//
// Checkpoints (copying the WAL into the database file, with an fsync under
// full and normal) run on a checkpointer goroutine of their own rather than
// inside the writer's commits (checkpoint.go).
//
// # Schema
//
// The schema is in migrations/*.sql, embedded and applied at Open in version
// order, each version once, recorded in the schema_migrations table. Times are
// stored as integer unix microseconds (parley.Now precision).
//
// # Metrics
//
// parley_store_queries_total{kind} counts every statement sent to SQLite
// (Store.Queries is its sum), parley_store_batch_size the writes per
// transaction, parley_store_commit_seconds the time of each batch in the
// writer, parley_store_fsync_seconds each fsync of the WAL (sync=full),
// parley_store_write_stage_seconds{stage} where each write's time went
// (package groupcommit's Timing) and parley_store_checkpoint_errors_total
// the failed checkpoints. parley_store_full_total counts the writes refused
// because the storage was full and parley_store_full is 1 while they are.
//
// # A full disk
//
// A write that SQLite fails with SQLITE_FULL (no room on the disk for the
// WAL, the database file or a temporary file; or the database at its
// max_page_count) was rolled back whole: its batch fails with CodeUnavailable,
// "the server's storage is full", and the client sends again with the same
// client-id. Reads go on. The state is logged once when it starts and once
// at the first write committed 5 s after the last refusal (full.go); seqs
// resume at the next one, since the failed transactions took none. A failed fsync is
// another matter: the group-commit writer stops at it (package groupcommit),
// since what was written may not be durable, and the node must restart.
//
// # Driver
//
// The cgo driver mattn/go-sqlite3 by default; modernc.org/sqlite (pure Go)
// when built with CGO_ENABLED=0 or -tags parley_modernc. DRIVER.md has the
// measurements behind the choice.
package sqlite
