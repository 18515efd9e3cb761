// Package groupcommit batches concurrent write requests into one
// transaction: the group commit of databases, as a small generic helper for
// the store backends (sqlite and postgres).
//
// A Writer owns one goroutine; Do hands it a request and blocks until it
// is done. The writer takes everything waiting, up to Config.MaxBatch, and
// calls the commit function once for the batch; with Config.Flush a
// flusher goroutine makes committed batches durable while the next one
// commits. Close finishes every request already accepted.
//
// Invariants: the commit function runs on the writer goroutine only, one
// batch at a time; a request dropped while queued (its context ended)
// never reaches it; once taken into a batch, Do returns the batch's
// outcome whatever the context does.
//
// It imports nothing of the project. docs/architecture.md ("groupcommit")
// has the design: the flusher, FlushInline, MaxUnflushed and yielding.
package groupcommit
