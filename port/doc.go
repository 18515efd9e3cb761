// Package port moves one SQLite node's whole data into a PostgreSQL
// database for cluster mode (`parley port`): users with their password
// hashes, tokens, rooms with their seq and change counters, members with
// their roles and read positions, bans, every message with its seq, id,
// client id, edits and tombstone, change keys and held names. It reads
// the source with its own SQL on a read-only *sql.DB and writes the target
// with its own on one pgx connection: it imports neither backend (the
// command opens, locks and migrates them).
//
// Copy. Each table is copied in its primary key's order, in batches
// (Config.Batch rows): COPY into the table (messages: into a temporary
// staging table, then one INSERT … SELECT that adds the search vector,
// to_tsvector('simple', body) for a live message and none for a
// tombstone, as the PostgreSQL store's send and delete write it).
//
// Resume. The target keeps the port's bookkeeping: parley_port, one row
// with the source's fingerprint (its row counts and rooms' positions),
// and parley_port_progress, each table's cursor (the key of its last row
// copied) and whether it is done. A batch's rows and its table's cursor
// commit in one transaction, so after a kill at any point the target
// holds whole batches and the cursor that follows them: the next run
// reads the source after the cursor, and every row lands exactly once (a
// row copied twice would break a primary key and stop the port loudly).
// A target that holds data and no bookkeeping, or another source's, is
// refused before anything is changed.
//
// Verify. At the end, both stores are read again and compared: each
// table's row count and a SHA-256 over every column of every row in key
// order, and each room's messages (a SHA-256 over seq, id, sender, body,
// client id, times, edit and tombstone fields, in seq order), each value
// reduced to one canonical form (times as unix microseconds) from either
// driver; and no live message may lack its search vector. Only a port
// that verifies is marked finished (parley_port.finished_at, and the
// progress table dropped); running again on a finished port verifies it
// again.
//
// It imports no package of the project.
package port
