package gateway

import (
	"sync"
	"time"

	"parley"
	"parley/hub"
	"parley/roomevents"
	"parley/stomp"

	"github.com/gobwas/ws"
)

// outItem is one queued outbound frame: a message for a subscription, or a
// frame encoded already (raw).
type outItem struct {
	msg   *hub.Message
	ev    *roomevents.RoomEvent // a room event for sub (events.go)
	sub   *subscription
	raw   []byte
	cmd   stomp.Command // of raw, for the metrics
	wsRaw bool          // raw is a whole WebSocket frame (pong, close)
}

// queue is a session's outbound queue, pooled: a session holds one only
// while it has something to write.
type queue struct {
	items []outItem
	bytes int
}

// Pools of queues and write buffers.
var (
	queuePool = sync.Pool{New: func() any { return &queue{items: make([]outItem, 0, 64)} }}
	bufPool   = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}
)

// putQueue empties q and gives it back to the pool.
func putQueue(q *queue) {
	if q == nil {
		return
	}
	queuePool.Put(recycle(q))
}

// putBuf gives a write buffer back to bufPool, emptied.
func putBuf(bp *[]byte) {
	*bp = (*bp)[:0]
	bufPool.Put(bp)
}

// maxWrite is the size past which a batch is written in more than one
// system call.
const maxWrite = 256 << 10

// Slow-consumer reasons, the label values of the slow-consumer metric.
const (
	reasonQueueFrames  = "queue_frames"  // the queue reached QueueFrames
	reasonQueueBytes   = "queue_bytes"   // the queue reached QueueBytes
	reasonCatchUpLag   = "catchup_lag"   // live messages outran a catch-up
	reasonWriteTimeout = "write_timeout" // one write blocked for WriteTimeout
)

// enqueueLocked queues one frame of n octets, or decides the session is a
// slow consumer. It never blocks.
func (s *session) enqueueLocked(it outItem, n int) {
	if s.dead {
		return
	}
	if s.q == nil {
		s.q = queuePool.Get().(*queue)
	}
	switch {
	case len(s.q.items) >= s.srv.cfg.QueueFrames:
		s.slowConsumerLocked(reasonQueueFrames)
		return
	case s.q.bytes+n > s.srv.cfg.QueueBytes:
		s.slowConsumerLocked(reasonQueueBytes)
		return
	}
	s.q.items = append(s.q.items, it)
	s.q.bytes += n
	s.queued++
	if it.msg != nil {
		s.startWriterSoonLocked()
	} else {
		s.startWriterLocked()
	}
}

// slowConsumerLocked is the one place that decides what happens when a
// session cannot keep up: whatever is queued is dropped, the client gets
// ERROR "slow consumer" and the session closes once that is written (or at
// once if the socket itself is stuck). The client learns of it and resumes
// with since-seq, so nothing is lost silently. Every case is counted in
// parley_stomp_slow_consumer_closes_total by reason.
func (s *session) slowConsumerLocked(reason string) {
	if s.dead && reason != reasonWriteTimeout {
		return
	}
	s.srv.m.slowConsumer.WithLabelValues(reason).Inc()
	s.setReasonLocked("slow consumer: " + reason)
	s.dropQueueLocked()
	if reason == reasonWriteTimeout {
		s.dead = true
		go s.close()
		return
	}
	err := parley.Errorf(parley.CodeSlowConsumer, "the client did not keep up with its messages (%s): reconnect and resume with since-seq", reason)
	b := encodeControl(errorFrame(err, nil), s.version)
	s.srv.m.refusals[refusalIndex(parley.CodeSlowConsumer)].Inc()
	s.finishLocked(outItem{cmd: stomp.Error, raw: b}, wsNormalClosure)
}

// writerNext is what a writer does after its look at the queue (take).
type writerNext int

const (
	nextWrite   writerNext = iota // write the batch taken
	nextRequeue                   // more is queued: back of the pool's line (s.writing stays set)
	nextWait                      // MESSAGEs queued wait for the write delay: its timer starts the writer
	nextStop                      // nothing is queued: the writer's job is over
	nextClose                     // the job is over and the session closes now
	nextLinger                    // the job is over, the last frames are written: lingerClose
)

// take is the writer's look at the queue. With frames queued it takes
// them (nextWrite) and leaves spare (an empty queue, or nil) in their
// place; the caller keeps spare otherwise. After a write (wrote), MESSAGEs
// queued meanwhile may wait for the write delay instead (nextWait), and a
// pool worker (requeue) leaves them for the session's next turn
// (nextRequeue). With nothing queued, or the session closed, the writer's
// job is over: s.writing is cleared, and the result says how the session
// ends, if it does.
func (s *session) take(spare *queue, wrote, requeue bool) (*queue, writerNext) {
	s.mu.Lock()
	s.delay.pending = false
	batch := s.q
	if batch == nil || len(batch.items) == 0 || s.closed {
		s.writing = false
		next := nextStop
		switch {
		case s.closeAfter && !s.closed:
			next = nextLinger
		case s.closeAfter || s.closed:
			next = nextClose
		}
		if !s.closed {
			s.q = nil
			putQueue(batch)
		}
		s.mu.Unlock()
		return nil, next
	}
	if wrote && s.waitForDelayLocked(batch.items) {
		s.mu.Unlock()
		return nil, nextWait
	}
	if requeue {
		s.mu.Unlock()
		return nil, nextRequeue
	}
	s.q = spare
	s.mu.Unlock()
	s.room.Broadcast()
	return batch, nextWrite
}

// end ends the session as take's next says, on the caller's goroutine.
func (s *session) end(next writerNext) {
	switch next {
	case nextLinger:
		s.lingerClose()
	case nextClose:
		s.close()
	}
}

// writeLoop is a session's own writer goroutine, for a session the pool
// does not write (launch): it takes everything queued, encodes it
// into one buffer and writes it with one system call, waiting for the
// client as long as WriteTimeout, until the queue is empty.
func (s *session) writeLoop() {
	s.writeOwn(bufPool.Get().(*[]byte), out{})
}

// writeOwn is writeLoop after b: a batch a pool worker began and the
// socket did not take at once (b.q nil: none), its unwritten octets in
// *bp.
func (s *session) writeOwn(bp *[]byte, b out) {
	var spare *queue
	wrote := b.q != nil
	for {
		if b.q == nil {
			batch, next := s.take(spare, wrote, false)
			if batch == nil {
				putQueue(spare)
				putBuf(bp)
				s.end(next) // which may linger: the buffers are back first
				return
			}
			spare = nil
			b = out{q: batch}
		}
		_, err := s.writeOut(bp, &b, true)
		wrote = true
		spare = recycle(b.q)
		b = out{}
		if err != nil {
			putQueue(spare)
			putBuf(bp)
			s.writeFailed(err)
			return
		}
	}
}

// writeTurn is a pool worker's turn at s: it writes the batch queued
// without waiting for the client. When the socket does not take it all at
// once, a goroutine of the session's own writes the rest and goes on as
// its writer (writeOwn), and the worker moves on. Otherwise, with more
// queued meanwhile, the session goes to the back of the line. What would
// wait (lingerClose, close, which waits for the hub's lock) runs on a
// goroutine of its own.
func (s *session) writeTurn(w *poolWorker) {
	batch, next := s.take(w.spare, false, false)
	if batch == nil {
		if next == nextLinger || next == nextClose {
			go s.end(next)
		}
		return
	}
	w.spare = nil
	b := out{q: batch}
	if stalled, _ := s.writeOut(w.bp, &b, false); stalled {
		s.srv.m.writeStalls.Inc()
		bp := w.bp
		w.bp = bufPool.Get().(*[]byte)
		go s.writeOwn(bp, b)
		return
	}
	w.spare = recycle(batch)
	switch _, next = s.take(nil, true, true); next {
	case nextRequeue:
		s.launch() // s.writing is set: the job is still this writer's
	case nextLinger, nextClose:
		go s.end(next)
	}
}

// writeFailed ends the session after a failed write.
func (s *session) writeFailed(err error) {
	s.mu.Lock()
	if isTimeout(err) && !s.srv.forced.Load() {
		s.slowConsumerLocked(reasonWriteTimeout)
	}
	s.writing = false
	s.mu.Unlock()
	s.close()
}

// recycle empties q for the writer's next batch.
func recycle(q *queue) *queue {
	clear(q.items)
	q.items, q.bytes = q.items[:0], 0
	return q
}

// out is a batch on its way to the socket.
type out struct {
	q       *queue
	next    int    // q.items[:next] are encoded
	pending []byte // encoded octets the socket has not taken yet
}

// writeOut writes b: its pending octets, then its items from b.next on,
// encoded into *bp a write's worth (maxWrite) at a time, then does the
// batch's accounting. With wait each write waits for the client (write);
// without, a write takes what the socket takes now, and when that is not
// everything writeOut reports stalled, b holding the rest (b.pending, in
// *bp), also for an error, which the write with wait meets again.
func (s *session) writeOut(bp *[]byte, b *out, wait bool) (stalled bool, err error) {
	for {
		if len(b.pending) > 0 {
			if wait {
				if err := s.write(b.pending); err != nil {
					return false, err
				}
			} else {
				n, err := s.writeNow(b.pending)
				if err != nil || n < len(b.pending) {
					b.pending = b.pending[n:]
					return true, nil
				}
			}
			b.pending = nil
		}
		if b.next == len(b.q.items) {
			break
		}
		*bp = s.encode((*bp)[:0], b)
		s.srv.m.writes.Inc() // first: a client that has the octets sees the count
		b.pending = *bp
	}
	s.wrote(b.q.items)
	return false, nil
}

// encode appends the wire form of b's items from b.next on to buf, until
// buf is maxWrite long or they are all in, and moves b.next past them.
func (s *session) encode(buf []byte, b *out) []byte {
	m := s.srv.m
	// open is where the header of the WebSocket frame that packs the
	// frames appended since is reserved (Config.PackWebSocket); -1: none.
	open := -1
	pack := s.websocket && s.srv.cfg.PackWebSocket
	items := b.q.items
	for b.next < len(items) && len(buf) < maxWrite {
		it := &items[b.next]
		b.next++
		if pack && !it.wsRaw {
			if open < 0 {
				open = len(buf)
				buf = append(buf, make([]byte, wsHeaderRoom)...)
			}
			buf = s.appendFrame(buf, it)
		} else {
			buf = closeWSFrame(buf, open)
			open = -1
			buf = s.appendItem(buf, it)
		}
		if it.msg == nil && it.ev == nil && it.cmd != 0 {
			m.framesOut[it.cmd].Inc()
		}
	}
	return closeWSFrame(buf, open)
}

// wrote counts a batch that is written and notes the time of the write.
func (s *session) wrote(batch []outItem) {
	m := s.srv.m
	now := time.Now()
	var msgs, events int
	for i := range batch {
		if mm := batch[i].msg; mm != nil {
			msgs++
			if !mm.Committed.IsZero() {
				m.latency.Observe(now.Sub(mm.Committed).Seconds())
			}
		} else if batch[i].ev != nil {
			events++
		}
	}
	if msgs > 0 {
		m.framesOut[stomp.Message].Add(float64(msgs))
		m.deliveries.Add(float64(msgs))
	}
	if events > 0 {
		m.framesOut[stomp.Message].Add(float64(events))
		m.eventDeliveries.Add(float64(events))
	}
	s.mu.Lock()
	s.lastWrite = now
	s.queued -= len(batch)
	s.mu.Unlock()
}

// wsHeaderRoom is the room reserved for a WebSocket frame's header before
// its payload is appended: the largest a server's header takes.
const wsHeaderRoom = 10

// appendItem appends the wire form of one queued frame: in a WebSocket
// text frame of its own for a WebSocket session.
func (s *session) appendItem(dst []byte, it *outItem) []byte {
	if it.wsRaw {
		return append(dst, it.raw...)
	}
	if !s.websocket {
		return s.appendFrame(dst, it)
	}
	start := len(dst)
	dst = append(dst, make([]byte, wsHeaderRoom)...)
	return closeWSFrame(s.appendFrame(dst, it), start)
}

// appendFrame appends the STOMP frame of one queued item (not wsRaw).
func (s *session) appendFrame(dst []byte, it *outItem) []byte {
	switch {
	case it.msg != nil:
		e := it.sub.encoded(it.msg)
		if it.sub.ack {
			dst, _ = e.p.Append(dst, it.sub.id, it.msg.ID)
		} else {
			dst, _ = e.p.Append(dst, it.sub.id)
		}
	case it.ev != nil:
		dst = it.sub.appendEvent(dst, it.ev) // events.go
	default:
		dst = append(dst, it.raw...)
	}
	return dst
}

// closeWSFrame ends the WebSocket text frame whose wsHeaderRoom octets of
// header room start at start and whose payload runs to the end of dst:
// it writes the header and moves the payload up to it. start < 0: no
// frame is open, dst is returned as it is.
func closeWSFrame(dst []byte, start int) []byte {
	if start < 0 {
		return dst
	}
	n := len(dst) - start - wsHeaderRoom
	gap := appendWSHeader(dst, start, ws.OpText, n)
	copy(dst[start:], dst[start+gap:])
	return dst[:len(dst)-gap]
}

// dropQueueLocked forgets everything queued.
func (s *session) dropQueueLocked() {
	if s.q != nil {
		s.queued -= len(s.q.items)
		recycle(s.q)
	}
}

func isTimeout(err error) bool {
	type timeout interface{ Timeout() bool }
	t, ok := err.(timeout)
	return ok && t.Timeout()
}
