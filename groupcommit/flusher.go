package groupcommit

import (
	"fmt"
	"time"
)

// flusherIdle reports, to the writer, whether the flusher has completed
// every batch handed to it. It stays so until the writer hands it more:
// only the writer does.
func (w *Writer[In, Out]) flusherIdle() bool {
	w.fmu.Lock()
	defer w.fmu.Unlock()
	return len(w.flushq) == 0 && !w.flushing
}

// flushOnce runs one Flush, for the flusher or (Config.FlushInline) the
// writer, and returns when it began and ended and its error, or the error
// that broke the Writer without flushing: batches committed after a failed
// Flush are not made durable by a later one that succeeds.
func (w *Writer[In, Out]) flushOnce() (start, end time.Time, err error) {
	start = time.Now()
	if broken := w.broken.Load(); broken != nil {
		err = *broken
	} else {
		err = w.safeFlush()
		w.flushes.Add(1)
		w.flushNanos.Add(uint64(time.Since(start)))
	}
	end = time.Now()
	if err != nil {
		w.broken.CompareAndSwap(nil, &err)
	}
	return start, end, err
}

// awaitRoom waits, with Config.Flush, until fewer than MaxUnflushed
// batches wait for a Flush to begin.
func (w *Writer[In, Out]) awaitRoom() {
	if w.flush == nil {
		return
	}
	w.fmu.Lock()
	for len(w.flushq) >= w.maxUnflushed {
		w.room.Wait()
	}
	w.fmu.Unlock()
}

// wakeFlusher tells the flusher that flushq changed; it never blocks.
func (w *Writer[In, Out]) wakeFlusher() {
	select {
	case w.fwake <- struct{}{}:
	default: // a wake-up is due already: the flusher takes all of flushq
	}
}

// runFlusher is the flusher goroutine: one Flush for every batch committed
// since the last one, then each batch in commit order. It ends when the
// writer has returned and flushq is empty.
func (w *Writer[In, Out]) runFlusher(stopped chan<- struct{}) {
	defer close(stopped)
	var spare []committed[In, Out]
	for {
		w.fmu.Lock()
		pending := w.flushq
		w.flushq = spare[:0]
		closed := w.fclosed
		w.flushing = len(pending) > 0 // until the next turn: pending completed
		w.room.Signal()
		w.fmu.Unlock()
		if len(pending) == 0 {
			if closed {
				return
			}
			<-w.fwake
			spare = pending
			continue
		}
		start, end, err := w.flushOnce()
		for _, c := range pending {
			w.complete(c, start, end, err)
		}
		clear(pending)
		spare = pending
	}
}

// complete sets the batch's error, if any, runs done and wakes the
// callers. flushStart and flushEnd are the times of the Flush that covered

// safeFlush calls Flush, turning a panic into an error.
func (w *Writer[In, Out]) safeFlush() (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("groupcommit: flush panicked: %v", p)
		}
	}()
	return w.flush()
}
