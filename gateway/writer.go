package gateway

import (
	"errors"
	"io"
	"os"
	"sync"
	"syscall"
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

// writeDelay is a session's delayed writer start (Config.WriteDelay,
// writeWait), guarded by the session's mu.
type writeDelay struct {
	timer   *time.Timer // runs s.delayed; made on first use, then reset
	pending bool        // the timer is set and has not started the writer
}

// startWriterLocked starts the writer now unless it runs, also when its
// delayed start is pending.
func (s *session) startWriterLocked() {
	if s.closed {
		return
	}
	if s.delay.pending {
		// Stop fails only when the timer has fired: its writer starts.
		if s.delay.timer.Stop() {
			s.delay.pending = false
			s.launch()
		}
		return
	}
	if !s.writing {
		s.writing = true
		s.launch()
	}
}

// launch starts the writer, whose job the caller has marked with
// s.writing: a turn of the server's writer pool (writers.go), or a
// goroutine of its own for a socket the pool cannot write without waiting
// (no raw connection), for a server without a pool (Config.Writers < 0)
// and once the pool is closed.
func (s *session) launch() {
	if !s.pooled() {
		go s.writeFn()
	}
}

// delayed is the write delay's timer function (armDelayLocked): the
// writer starts, on the timer's goroutine when the pool does not take it.
func (s *session) delayed() {
	if !s.pooled() {
		s.writeLoop()
	}
}

// pooled puts s in the writer pool's line, if the server has a pool that
// is open and s a raw connection the pool can write without waiting.
func (s *session) pooled() bool {
	p := s.srv.writers
	return p != nil && s.rc != nil && p.push(s)
}

// startWriterSoonLocked starts the writer for a MESSAGE unless it runs or
// its start is pending: at once if the session's last write is
// Config.WriteDelay old or more, else when it will be (writeWait). The
// frames queued meanwhile go out in the same write, in queue order (the
// writer is one).
func (s *session) startWriterSoonLocked() {
	if s.writing || s.closed {
		return // the writer runs, or starts soon: it takes this frame too
	}
	if s.srv.cfg.WriteDelay <= 0 {
		s.startWriterLocked() // no pacing: no need to read the clock
		return
	}
	wait := writeWait(s.lastWrite, time.Now(), s.srv.cfg.WriteDelay)
	if wait <= 0 {
		s.startWriterLocked()
		return
	}
	s.writing = true
	s.armDelayLocked(wait)
}

// armDelayLocked sets the writer's delayed start to run after wait; the
// caller has set s.writing.
func (s *session) armDelayLocked(wait time.Duration) {
	s.delay.pending = true
	if s.delay.timer == nil {
		s.delay.timer = time.AfterFunc(wait, s.delayed)
	} else {
		s.delay.timer.Reset(wait)
	}
}

// waitForDelayLocked is the writer's check after a write: when items (the
// frames queued during it) are all MESSAGEs and the session is open, it
// sets the delayed start for what is left of Config.WriteDelay and reports
// true, so the writer returns with s.writing still set. A frame of any
// other kind, or a closing session, writes at once.
func (s *session) waitForDelayLocked(items []outItem) bool {
	if s.srv.cfg.WriteDelay <= 0 || len(items) == 0 || s.closed || s.closeAfter {
		return false
	}
	for i := range items {
		if items[i].msg == nil {
			return false
		}
	}
	wait := writeWait(s.lastWrite, time.Now(), s.srv.cfg.WriteDelay)
	if wait <= 0 {
		return false
	}
	s.armDelayLocked(wait)
	return true
}

// writeWait is how long a MESSAGE queued at now waits for the writer of a
// session whose last write ended at last: a session writes MESSAGEs at
// most once per delay, so one queued within delay of the last write waits
// for the rest of it, and one after a quiet spell (or with no delay) does
// not wait at all.
func writeWait(last, now time.Time, delay time.Duration) time.Duration {
	if delay <= 0 || last.IsZero() {
		return 0
	}
	return last.Add(delay).Sub(now)
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

// write writes b to the socket, waiting at most WriteTimeout for the
// client to take it. It first writes what the socket takes now, without
// waiting and so without a deadline (writeNow): in the common case, a
// client that keeps up, that is all of b, and the timer behind a write
// deadline is never touched. Only a rest that the socket's buffer cannot
// take waits, with the deadline. Once Shutdown's ctx has ended
// (srv.forced) it does not wait at all: it fails if the socket does not
// take everything now, so no client can hold Shutdown past its deadline.
//
// The choice to wait is made under s.mu, and interruptWrite sets its
// deadline under s.mu after srv.forced is set: a waiting write either sees
// forced, or set its deadline before interruptWrite and is cut short by
// it.
func (s *session) write(b []byte) error {
	if s.rc != nil {
		n, err := s.writeNow(b)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			// interruptWrite's deadline: Shutdown is forced (below).
			// rc.Write fails on it before writing anything.
		case err != nil || n == len(b):
			return err
		default:
			b = b[n:]
		}
	}
	s.mu.Lock()
	forced := s.srv.forced.Load()
	if forced {
		s.conn.SetWriteDeadline(time.Time{}) // undo interruptWrite's: rc.Write checks it
	} else {
		s.conn.SetWriteDeadline(time.Now().Add(s.srv.cfg.WriteTimeout))
	}
	s.mu.Unlock()
	if forced {
		if s.rc == nil {
			return errClosed // no way to write without waiting
		}
		n, err := s.writeNow(b)
		if err == nil && n < len(b) {
			err = errWouldWait
		}
		return err
	}
	_, err := s.conn.Write(b)
	if err == nil && s.rc != nil {
		// Leave no deadline behind: writeNow would fail on it once
		// it has passed. A forced Shutdown's (interruptWrite) stays.
		s.mu.Lock()
		if !s.srv.forced.Load() {
			s.conn.SetWriteDeadline(time.Time{})
		}
		s.mu.Unlock()
	}
	return err
}

// errWouldWait fails a write that the socket did not take at once after
// Shutdown was forced.
var errWouldWait = errors.New("gateway: the client is not reading and Shutdown is forced")

// writeNow writes what the socket takes of b without waiting and reports
// how much that was. The function it hands the poller is s.nowFn, made
// once per session, and its arguments pass through the session (only the
// writer writes), so that a write allocates nothing.
func (s *session) writeNow(b []byte) (int, error) {
	s.nowBuf, s.nowN, s.nowErr = b, 0, nil
	err := s.rc.Write(s.nowFn)
	n, werr := s.nowN, s.nowErr
	s.nowBuf, s.nowErr = nil, nil
	if err != nil {
		return n, err
	}
	return n, werr
}

// writeSome is s.nowFn: it writes s.nowBuf to fd until the socket's
// buffer is full (EAGAIN, not an error: the rest waits) or a real error.
func (s *session) writeSome(fd uintptr) bool {
	for s.nowN < len(s.nowBuf) {
		n, err := syscall.Write(int(fd), s.nowBuf[s.nowN:])
		if err == syscall.EINTR {
			continue
		}
		if err == syscall.EAGAIN {
			break
		}
		if err != nil {
			s.nowErr = os.NewSyscallError("write", err)
			break
		}
		s.nowN += n
	}
	return true // never wait: write waits, with a deadline, if need be
}

// interruptWrite cuts short a write waiting for the client; Shutdown calls
// it after setting srv.forced.
func (s *session) interruptWrite() {
	s.mu.Lock()
	lingering := s.lingering
	if !s.closed {
		s.conn.SetWriteDeadline(time.Now())
	}
	s.mu.Unlock()
	if lingering {
		s.close() // its last frames are written: waiting for the peer is over
	}
}

// Lingering close: a socket closed while input it has not read waits in
// its receive buffer is reset (RST), not closed, and the reset makes the
// peer's kernel throw away what it has not handed to the client yet: the
// last RECEIPT, the ERROR that says why. A client may well have sent more
// frames after the one the session ends on (a SEND pipelined behind one
// finishing during Shutdown), so lingerClose reads them away first, for
// at most Config.LingerTime.

// lingerBytes bounds how much of the peer's input lingerClose reads away.
const lingerBytes = 256 << 10

// lingerClose ends a session whose last frames are written: it sends FIN,
// reads and drops the peer's input until the peer closes, LingerTime has
// passed or lingerBytes were read, then closes. It runs on the writer
// goroutine. Once Shutdown is forced it closes at once, and a Shutdown
// forced meanwhile closes it (interruptWrite): the check of srv.forced
// and the lingering mark are made under s.mu, which interruptWrite takes
// after forced is set.
//
// The bound is a timer that closes the socket, not the read deadline
// alone: a reader still in the middle of a frame moves the socket's read
// deadline to its own frame timeout, and one between frames clears it.
func (s *session) lingerClose() {
	hc, ok := s.conn.(interface{ CloseWrite() error })
	s.mu.Lock()
	ok = ok && !s.closed && !s.srv.forced.Load()
	s.lingering = ok
	s.mu.Unlock()
	if ok && hc.CloseWrite() == nil {
		linger := s.srv.cfg.LingerTime
		s.conn.SetReadDeadline(time.Now().Add(linger))
		timer := time.AfterFunc(linger, s.close)
		io.Copy(io.Discard, io.LimitReader(s.conn, lingerBytes))
		timer.Stop()
	}
	s.close()
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
