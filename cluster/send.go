package cluster

import (
	"context"
	"time"

	"parley"
)

// Watermark is how far the shared hot data (redis.HotStore) has written
// this node's commits to Redis.
type Watermark interface {
	// Mark returns the mark of the newest commit the hot data has taken.
	// The relay's Apply runs after the hot data's, so it is the mark of
	// the commit the relay is given.
	Mark() uint64
	// Await returns once every commit through mark is written, or failed
	// (the hot data bounds each write by its timeout), or ctx ends.
	Await(ctx context.Context, mark uint64)
}

// outgoing is what one commit of this node sends to other nodes: its
// batches and its rooms' heads, held by the sender until the hot data has
// written the commit (Config.Written).
type outgoing struct {
	mark    uint64
	at      time.Time // when the run goroutine handed it over
	batches []outBatch
	heads   map[string]int64
}

type outBatch struct {
	b    parley.Batch
	kind string // the batches metric's label
}

// publishLater adds a batch to the commit the run goroutine is handling.
func (r *Relay) publishLater(b parley.Batch, kind string) {
	r.out.batches = append(r.out.batches, outBatch{b: b, kind: kind})
}

// headLater records the commit's head of a room, written with its
// batches.
func (r *Relay) headLater(roomID string, seq int64) {
	if r.cfg.Heads == nil {
		return
	}
	if r.out.heads == nil {
		r.out.heads = map[string]int64{}
	}
	r.out.heads[roomID] = max(r.out.heads[roomID], seq)
}

// flushOut hands the commit's batches and heads, noted by local, to the
// sender goroutine.
func (r *Relay) flushOut(mark uint64) {
	o := r.out
	r.out = outgoing{}
	if len(o.batches) == 0 && len(o.heads) == 0 {
		return
	}
	o.mark = mark
	o.at = time.Now()
	r.smu.Lock()
	r.sendq = append(r.sendq, o)
	n := len(r.sendq)
	r.smu.Unlock()
	r.m.unpublished.Set(float64(n))
	select {
	case r.sendWake <- struct{}{}:
	default:
	}
}

// sendLoop is the sender goroutine, started by Start: in commit order, it
// waits until the hot data holds a commit (Config.Written), then publishes
// its batches and notes its heads, so that a node that hears of a message
// finds it in the hot data too, and every read it serves from Redis has
// it. The run goroutine meanwhile goes on delivering to the local
// sessions, which the node's own reads wait for (redis.HotStore). It
// returns once Close has stopped the run goroutine and the queue is
// empty.
func (r *Relay) sendLoop() {
	defer close(r.sendDone)
	for {
		r.smu.Lock()
		q := r.sendq
		r.sendq = nil
		closing := r.sendClosing
		r.smu.Unlock()
		for _, o := range q {
			if r.cfg.Written != nil {
				r.cfg.Written.Await(context.Background(), o.mark)
			}
			if len(o.batches) > 0 {
				r.m.publishWait.Observe(time.Since(o.at).Seconds())
			}
			for _, ob := range o.batches {
				r.publish(ob.b, ob.kind)
			}
			for room, seq := range o.heads {
				r.noteHead(room, seq)
			}
		}
		if len(q) > 0 {
			r.smu.Lock()
			n := len(r.sendq)
			r.smu.Unlock()
			r.m.unpublished.Set(float64(n))
			continue
		}
		if closing {
			return
		}
		<-r.sendWake
	}
}

// stopSending lets the sender publish what is queued, then stop; the run
// goroutine has returned.
func (r *Relay) stopSending() {
	r.smu.Lock()
	r.sendClosing = true
	r.smu.Unlock()
	select {
	case r.sendWake <- struct{}{}:
	default:
	}
	<-r.sendDone
}
