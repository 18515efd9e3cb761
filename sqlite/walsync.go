package sqlite

import (
	"os"
	"time"
)

// walSyncer makes the WAL durable for the group-commit Writer (sync=full):
// its flusher, or its writer while the syncs are fast (fast), one at a
// time.
//
// Where the system allows (walsync_linux.go) a sync is a raw system call:
// the flusher keeps its P while the disk works instead of giving it away
// and queueing for one again behind every runnable session goroutine of a
// busy node, which was most of a commit's fsync stage under load
// (docs/perf-log.md, "The WAL's fsync as a raw system call"). The price is a
// P busy for the sync's length, and a stop-the-world pause of the garbage
// collector that waits for a running sync: fine for a disk that syncs in a
// fraction of a millisecond, a stall of the whole node for one that takes
// tens. So the syncer keeps a moving average of its raw syncs and goes
// through the scheduler while that average is rawSyncMax or more, with one
// raw sync in rawProbeEvery to notice when the disk is fast again.
type walSyncer struct {
	f     *os.File
	raw   func(*os.File) error // a raw sync, nil where there is none
	sched func(*os.File) error // a sync through the scheduler
	rawOK func() bool          // whether a raw sync may run now (enough Ps)
	avg   time.Duration        // moving average of the raw syncs (1/8 weight)
	skips int                  // scheduled syncs since the last raw one
	now   func() time.Time     // the clock (tests)
}

const (
	rawSyncMax    = 2 * time.Millisecond
	rawProbeEvery = 16
)

// fast reports whether the WAL's syncs are fast: the raw syncs' moving
// average under rawSyncMax (none measured yet counts as fast). While they
// are, the group-commit writer syncs a batch itself right after committing
// it instead of handing it to the flusher (groupcommit.Config.FlushInline):
// the overlap of a sync with the next commit saves less than the two
// goroutine hand-offs cost on a busy node (docs/perf-log.md, "Session 11").
// On a slow disk the flusher overlaps them. The group-commit Writer calls
// it only while no sync runs.
func (w *walSyncer) fast() bool { return w.avg < rawSyncMax }

// sync syncs the WAL and returns how long it took.
func (w *walSyncer) sync() (time.Duration, error) {
	start := w.now()
	slow := !w.fast()
	if w.raw != nil && w.rawOK() && (!slow || w.skips >= rawProbeEvery-1) {
		err := w.raw(w.f)
		d := w.now().Sub(start)
		w.avg += (d - w.avg) / 8
		w.skips = 0
		return d, err
	}
	if slow {
		w.skips++
	}
	err := w.sched(w.f)
	return w.now().Sub(start), err
}
