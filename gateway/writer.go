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
	"parley/stomp"

	"github.com/gobwas/ws"
)

// outItem is one queued outbound frame: a message for a subscription, or a
// frame encoded already (raw).
type outItem struct {
	msg   *hub.Message
	ev    *hub.RoomEvent // a room event for sub (events.go)
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
	clear(q.items)
	q.items, q.bytes = q.items[:0], 0
	queuePool.Put(q)
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
	s.srv.m.queued.Add(1)
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
	timer   *time.Timer // runs s.writeFn; made on first use, then reset
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
			go s.writeFn()
		}
		return
	}
	if !s.writing {
		s.writing = true
		go s.writeFn()
	}
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
		s.delay.timer = time.AfterFunc(wait, s.writeFn)
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

// writeLoop is the writer: it takes everything queued, encodes it into one
// buffer and writes it with one system call, until the queue is empty.
func (s *session) writeLoop() {
	bp := bufPool.Get().(*[]byte)
	var spare *queue
	wrote := false
	for {
		s.mu.Lock()
		s.delay.pending = false
		batch := s.q
		if wrote && batch != nil && s.waitForDelayLocked(batch.items) {
			// MESSAGEs queued during the last write wait for the
			// delay like any other: the timer runs a new writer.
			s.mu.Unlock()
			putQueue(spare)
			*bp = (*bp)[:0]
			bufPool.Put(bp)
			return
		}
		if batch == nil || len(batch.items) == 0 || s.closed {
			s.writing = false
			closeNow := s.closeAfter || s.closed
			linger := s.closeAfter && !s.closed // the last frames are written
			if !s.closed {
				s.q = nil
				putQueue(batch)
			}
			s.mu.Unlock()
			putQueue(spare)
			*bp = (*bp)[:0]
			bufPool.Put(bp)
			switch {
			case linger:
				s.lingerClose()
			case closeNow:
				s.close()
			}
			return
		}
		s.q = spare
		s.mu.Unlock()
		s.room.Broadcast()

		err := s.writeBatch(bp, batch.items)
		wrote = true
		clear(batch.items)
		batch.items, batch.bytes = batch.items[:0], 0
		spare = batch
		if err != nil {
			s.mu.Lock()
			if isTimeout(err) && !s.srv.forced.Load() {
				s.slowConsumerLocked(reasonWriteTimeout)
			}
			s.writing = false
			s.mu.Unlock()
			s.close()
			putQueue(spare)
			*bp = (*bp)[:0]
			bufPool.Put(bp)
			return
		}
	}
}

// writeBatch encodes batch into *bp and writes it, in one system call
// unless it is over maxWrite.
func (s *session) writeBatch(bp *[]byte, batch []outItem) error {
	m := s.srv.m
	buf := (*bp)[:0]
	var msgs, deliveries, events int
	var err error
	flush := func() {
		if err != nil || len(buf) == 0 {
			return
		}
		m.writes.Inc() // first: a client that has the octets sees the count
		err = s.write(buf)
		buf = buf[:0]
	}
	// open is where the header of the WebSocket frame that packs the
	// frames appended since is reserved (Config.PackWebSocket); -1: none.
	open := -1
	pack := s.websocket && s.srv.cfg.PackWebSocket
	for i := range batch {
		it := &batch[i]
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
		if it.msg != nil {
			msgs++
		} else if it.ev != nil {
			events++
		} else if it.cmd != 0 {
			m.framesOut[it.cmd].Inc()
		}
		if len(buf) >= maxWrite {
			buf = closeWSFrame(buf, open)
			open = -1
			flush()
		}
	}
	buf = closeWSFrame(buf, open)
	flush()
	*bp = buf
	if err != nil {
		return err
	}
	now := time.Now()
	for i := range batch {
		if mm := batch[i].msg; mm != nil {
			deliveries++
			if !mm.Committed.IsZero() {
				m.latency.Observe(now.Sub(mm.Committed).Seconds())
			}
		}
	}
	m.queued.Add(-int64(len(batch)))
	if msgs > 0 {
		m.framesOut[stomp.Message].Add(float64(msgs))
		m.deliveries.Add(float64(deliveries))
	}
	if events > 0 {
		m.framesOut[stomp.Message].Add(float64(events))
		m.eventDeliveries.Add(float64(events))
	}
	s.mu.Lock()
	s.lastWrite = now
	s.mu.Unlock()
	return nil
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
// deadline to its own frame timeout.
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
		s.srv.m.queued.Add(-int64(len(s.q.items)))
		clear(s.q.items)
		s.q.items, s.q.bytes = s.q.items[:0], 0
	}
}

func isTimeout(err error) bool {
	type timeout interface{ Timeout() bool }
	t, ok := err.(timeout)
	return ok && t.Timeout()
}
