// Package groupcommit batches concurrent write requests into one
// transaction: the group commit of databases, as a small generic helper for
// the store backends (sqlite and postgres).
//
// A Writer owns one goroutine, the writer. Callers hand it requests with Do
// and block until their own request is done. The writer takes everything
// waiting, up to Config.MaxBatch requests, and calls the commit function once
// for the batch; that function runs the batch in one transaction and sets the
// result of each request. While one batch commits (an fsync, typically) the
// next requests queue up, so the batch size grows with the load by itself:
// one caller alone pays one commit, a thousand callers share a few.
//
// # Concurrency
//
// Do is safe for concurrent use. The commit function is only ever called by
// the writer goroutine, one batch at a time, so it may keep unsynchronized
// state between batches (prepared statements, a clock). The writer is
// started by New and stopped by Close, which first lets it finish every
// request that was already accepted.
//
// With Config.Flush the commit has two stages, as when a transaction is
// committed without waiting for the fsync that makes it durable: the writer
// commits a batch and goes on with the next one, while a second goroutine,
// the flusher, calls Flush once for all the batches committed so far and
// then completes them in commit order. The fsync of one batch then overlaps
// the work of the next instead of stalling the writer. A Flush covers the
// batches whose commit returned before it began, never one after.
//
// Config.FlushInline lets the writer run the Flush itself, right after its
// commit, while the flusher has nothing to do: no hand-off to the flusher
// and back to the writer, each of which is a goroutine waking and waiting
// for a free P on a busy node. The price is the overlap of the Flush with
// the next commit, which matters on a disk whose syncs are slow; on one
// that syncs in under a millisecond, the hand-offs cost more
// (docs/perf-log.md, "Session 11": a lower p99 at high load, the same
// throughput within the noise).
//
// Config.MaxUnflushed is how many committed batches may wait for the next
// Flush. With the default, 1, the writer holds a committed batch until the
// flusher is free and lets the next requests gather behind it, so that
// under a heavy load they form one large batch rather than trickle through
// as many small commits; a request that arrives just after it then waits
// for the rest of the running fsync and two more. With 2 or more such a
// request is committed at once and the next Flush covers it with the
// other batches committed meanwhile (one fsync less to wait for, one
// commit more to pay). docs/perf-log.md ("Where a delivery's time goes")
// has what each setting measured.
//
// Callers that send again as soon as they are answered (a closed loop: a
// client that pipelines its messages, each session's sends one after the
// other) would otherwise settle into halves: the writer takes its next
// batch the moment it has woken the callers of the last one, so that batch
// holds only those who queued while the last one ran, and the callers just
// woken queue behind it. Each commit then pays for its rooms' pages with
// half the messages it could carry (docs/perf-log.md, "Session 13"). So after
// waking at least YieldAfter callers itself (an inline Flush, or none), the
// writer yields its goroutine (Config.Yield, runtime.Gosched) before it
// takes the next batch, until the queue holds as many requests as it woke
// plus those queued before it woke them (or a full batch), a turn adds
// nothing, or yieldTurns turns have passed. The callers it woke mostly sit
// on its own P's run queue and usually run first, joining that batch; the
// scheduler promises nothing, hence the bounds. No time is waited for, so
// light loads (batches under YieldAfter, and every batch when MaxBatch is
// smaller) never yield, and an open load only lets goroutines that were
// runnable anyway run first. Batches the flusher completes are not waited
// for: the writer has already moved on to the next one, which is the
// overlap the flusher is for.
//
// A request whose caller's context ends while it is still queued is dropped:
// it never reaches the commit function and Do returns the context's error.
// Once the writer has taken a request into a batch, Do waits for the batch's
// outcome whatever the context does, so that an error from Do means the
// request was not applied (or, for an error from the commit itself, that its
// outcome is the commit's) and a nil error means it was.
package groupcommit
