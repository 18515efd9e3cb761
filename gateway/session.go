package gateway

import (
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"parley"
	"parley/stomp"
)

// session is one client connection, over WebSocket or raw TCP.
//
// Goroutines: at most one reader at a time (started by wake, or the
// blocking loop for a socket the poller cannot watch), at most one writer
// at a time while the queue is non-empty (s.writing: a turn of the
// server's writer pool, or a goroutine of its own; launch), a catch-up
// per resuming subscription, and timer callbacks. close ends them all.
type session struct {
	srv       *Server
	conn      net.Conn
	rc        syscall.RawConn // nil: the socket cannot be polled
	fd        int
	websocket bool
	id        string
	prefix    []byte // octets read before the session started (WebSocket upgrade)
	opened    time.Time

	// wsFragmented is owned by the reader (one at a time; reading hands
	// it over): the client's current WebSocket message has had a frame
	// without FIN, so continuation frames follow (RFC 6455 §5.4).
	wsFragmented bool
	// readDeadline is owned by the reader, as wsFragmented: the socket
	// has the read deadline of a frame, which the next read between
	// frames takes away (connReader.Read).
	readDeadline bool

	reading  atomic.Bool        // a reader goroutine runs
	lastRead atomic.Int64       // unix nanoseconds of the last frame read
	readFn   func()             // s.readReady, as a func value made once
	writeFn  func()             // s.writeLoop, as a func value made once
	nowFn    func(uintptr) bool // s.writeSome, as a func value made once

	// Owned by the writer (one at a time): writeNow's argument and
	// results, passed through the session so that nowFn is made once.
	nowBuf []byte
	nowN   int
	nowErr error
	timer  *time.Timer // connect timeout, then heart-beats

	regUser string // guarded by srv.mu: the user whose sessions in srv.users hold this one
	overCap bool   // guarded by srv.mu: refused for the node's MaxConns (see Server.add)

	// key is the API key the session signed in with (nil: a person's):
	// set by connect and read by handleFrame, both on the frame reader.
	key *parley.APIKey

	mu          sync.Mutex // guards the following fields
	room        sync.Cond  // on mu: signalled when the writer takes the queue
	connected   bool
	user        parley.User
	version     stomp.Version
	sendEvery   time.Duration // heart-beats we owe the client
	recvEvery   time.Duration // heart-beats the client owes us
	lastWrite   time.Time
	subs        []*subscription
	q           *queue     // outbound queue; nil when empty and no writer runs
	queued      int        // frames queued or being written (Server.queuedFrames)
	writing     bool       // a writer runs or waits in the pool's line, or its start is delayed (delay)
	delay       writeDelay // the writer's delayed start (writer.go)
	dead        bool       // refused or closing: nothing more is queued
	busy        bool       // the reader is acting on a frame (handle)
	draining    bool       // Shutdown began: act on no new frame, go away after the current one
	closeAfter  bool       // close once the queue is written
	lingering   bool       // the last frames are written: lingerClose waits for the peer
	closed      bool
	readStopped bool        // the reader saw the end: do not re-arm
	stopExpiry  func() bool // stops the token expiry timer; nil when none
	reason      string      // why the session ends, for its last log line (setReasonLocked)
}

// start runs a session on an accepted or upgraded connection.
func (srv *Server) start(c net.Conn, websocket bool, prefix []byte) {
	s := &session{srv: srv, conn: c, websocket: websocket, id: parley.NewID(), prefix: prefix, fd: -1, opened: time.Now()}
	s.room.L = &s.mu
	s.readFn = s.readReady
	s.writeFn = s.writeLoop
	s.nowFn = s.writeSome
	s.version = stomp.V12
	s.lastRead.Store(time.Now().UnixNano())
	if sc, ok := c.(syscall.Conn); ok {
		if rc, err := sc.SyscallConn(); err == nil {
			rc.Control(func(fd uintptr) {
				s.fd = int(fd)
				if n := srv.cfg.SendBuffer; n > 0 {
					// Best effort: a socket that refuses keeps its buffer,
					// and only WriteTimeout finds a client that stops
					// reading.
					setSendBuffer(fd, n)
				}
			})
			s.rc = rc
		}
	}
	overCap, ok := srv.add(s)
	if !ok {
		c.Close()
		return
	}
	s.logOpen()
	if overCap {
		s.refuse(errNodeFull, nil) // before any read: no frame is acted on
		return
	}
	s.mu.Lock()
	s.timer = time.AfterFunc(srv.cfg.ConnectTimeout, s.tick)
	s.mu.Unlock()
	// s.rc is not changed once the session is added: Shutdown may be
	// closing it already (close and the writer read s.rc). A session the
	// poller does not watch reads blocking; close's poll.remove is a no-op
	// for it.
	if s.rc == nil || srv.poll.add(s) != nil {
		go s.readBlocking()
		return
	}
	s.mu.Lock()
	closed := s.closed
	s.mu.Unlock()
	if closed {
		// close ran before add: its poll.remove found nothing to remove.
		srv.poll.remove(s)
		return
	}
	if len(prefix) > 0 {
		s.wake()
	}
}

// wake starts a reader for a readable socket, unless one runs already.
func (s *session) wake() {
	if s.reading.CompareAndSwap(false, true) {
		go s.readFn()
	}
}

// readReady reads and handles every frame the socket has, then gives the
// read buffers back and re-arms the socket.
func (s *session) readReady() {
	pool := &s.srv.tcpReaders
	if s.websocket {
		pool = &s.srv.wsReaders
	}
	rs, _ := pool.Get().(*readState)
	if rs == nil {
		rs = newReadState(s.websocket, s.srv.limits)
	}
	rs.reset(s)
	ok := s.readFrames(rs)
	rs.release()
	pool.Put(rs)
	s.reading.Store(false)
	if !ok {
		return
	}
	s.mu.Lock()
	stop := s.closed || s.readStopped
	s.mu.Unlock()
	if stop {
		return
	}
	if err := s.srv.poll.rearm(s); err != nil {
		s.close()
	}
}

// readBlocking is the reader of a socket the poller cannot watch: one
// goroutine for the session's lifetime.
func (s *session) readBlocking() {
	rs := newReadState(s.websocket, s.srv.limits)
	rs.reset(s)
	rs.cr.blocking = true
	s.readFrames(rs)
}

// readFrames handles frames until the socket is drained (true) or the
// session ends (false).
func (s *session) readFrames(rs *readState) bool {
	for {
		if rs.idle() {
			rs.arm()
		}
		f, err := rs.sr.Read()
		if err != nil {
			if err == errIdle {
				return true
			}
			s.readFailed(err)
			return false
		}
		rs.cr.frameStart = time.Time{}
		s.lastRead.Store(time.Now().UnixNano())
		s.srv.m.framesIn[f.Command].Inc()
		if !s.handle(f, rs) {
			s.stopReading()
			return false
		}
	}
}

// readFailed ends the session after a read error: a protocol error gets an
// ERROR frame, a closed or dead socket just closes.
func (s *session) readFailed(err error) {
	s.stopReading()
	switch {
	case errors.Is(err, stomp.ErrTooLarge):
		s.refuse(parley.Errorf(parley.CodeTooLarge, "%v", err), nil)
	case errors.Is(err, stomp.ErrMalformed):
		s.refuse(parley.Errorf(parley.CodeInvalid, "%v", err), nil)
	case errors.Is(err, errWSProtocol):
		s.refuseStatus(parley.Errorf(parley.CodeInvalid, "%v", err), nil, wsProtocolError)
	case errors.Is(err, os.ErrDeadlineExceeded):
		s.refuse(parley.Errorf(parley.CodeInvalid, "incomplete frame: the rest did not arrive in time"), nil)
	case err == errWSClose:
		// closeWebSocket queued the answer and the close.
	case err == io.EOF || err == io.ErrUnexpectedEOF:
		s.setReason("client closed the connection")
		s.close()
	default:
		s.setReason("read error: " + err.Error())
		s.close()
	}
}

func (s *session) stopReading() {
	s.mu.Lock()
	s.readStopped = true
	s.mu.Unlock()
}

// readVersion is the protocol version frames are read in.
func (s *session) readVersion() stomp.Version {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.version
}

// frameTimeout bounds the wait for the rest of a frame that has begun.
// The server sets it: a client's heart-beat does not stretch it.
func (s *session) frameTimeout() time.Duration {
	return s.srv.cfg.FrameTimeout
}

// tick is the session's timer: the connect timeout before CONNECT, then
// the heart-beats both ways.
func (s *session) tick() {
	now := time.Now()
	s.mu.Lock()
	if s.closed || s.dead {
		s.mu.Unlock()
		return
	}
	if !s.connected {
		s.mu.Unlock()
		s.refuse(parley.Errorf(parley.CodeUnauthorized, "no CONNECT frame within %v", s.srv.cfg.ConnectTimeout), nil)
		return
	}
	if s.recvEvery > 0 && now.Sub(time.Unix(0, s.lastRead.Load())) > 2*s.recvEvery {
		s.mu.Unlock()
		s.srv.m.heartbeatTimeouts.Inc()
		s.refuse(parley.Errorf(parley.CodeInvalid, "no heart-beat from the client for over %v", 2*s.recvEvery), nil)
		return
	}
	if s.sendEvery > 0 && now.Sub(s.lastWrite) >= s.sendEvery/2 {
		s.enqueueLocked(outItem{cmd: stomp.Heartbeat, raw: heartbeat}, 1)
	}
	s.timer.Reset(s.tickEveryLocked())
	s.mu.Unlock()
}

var heartbeat = []byte{'\n'}

// tickEveryLocked is the timer period once connected.
func (s *session) tickEveryLocked() time.Duration {
	switch {
	case s.sendEvery > 0 && s.recvEvery > 0:
		return min(s.sendEvery/2, s.recvEvery)
	case s.sendEvery > 0:
		return s.sendEvery / 2
	default:
		return s.recvEvery
	}
}

// refuse sends ERROR for err and closes the session once it is written.
func (s *session) refuse(err error, receipt []byte) {
	s.refuseStatus(err, receipt, 0)
}

// refuseStatus is refuse with the status of the WebSocket Close frame
// that follows the ERROR: 0 for the usual one (normal, or going away
// during shutdown).
func (s *session) refuseStatus(err error, receipt []byte, wsStatus uint16) {
	code := parley.ErrorCode(err)
	if code == parley.CodeInternal && !errors.Is(err, errClosed) { // errClosed: a frame of a session ended meanwhile
		s.srv.log.Error("stomp session", "session", s.id, "err", err)
	}
	b := encodeControl(errorFrame(err, receipt), s.readVersion())
	s.logRefusal(err)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead { // refused or ended already: this ERROR is never sent
		return
	}
	s.setReasonLocked("refused: " + code)
	s.srv.m.refusals[refusalIndex(code)].Inc()
	status := wsStatus
	switch {
	case status != 0:
	case s.srv.ctx.Err() != nil: // the server is shutting down
		status = wsGoingAway
	default:
		status = wsNormalClosure
	}
	s.finishLocked(outItem{cmd: stomp.Error, raw: b}, status)
}

// drain marks the session draining for Shutdown: it acts on no new frame.
// It reports whether a frame is being handled; if so, the handler sends
// the going-away ERROR when it is done (endFrame), after the frame's own
// answer, and the caller must not refuse the session now.
func (s *session) drain() (busy bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.draining = true
	return s.busy
}

// beginFrame marks the session busy with a frame, unless it is refused,
// closed or draining (then the frame must not act: false).
func (s *session) beginFrame() (connected, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.dead || s.draining {
		return false, false
	}
	s.busy = true
	return s.connected, true
}

// endFrame ends what beginFrame began. When Shutdown began meanwhile, it
// refuses the session with the going-away ERROR, queued after the frame's
// answer (a no-op if the frame refused the session already), and reports
// false: reading stops.
func (s *session) endFrame() bool {
	s.mu.Lock()
	s.busy = false
	draining := s.draining
	s.mu.Unlock()
	if draining {
		s.refuse(goingAway, nil)
		return false
	}
	return true
}

// WebSocket Close statuses (RFC 6455 §7.4.1) of the sessions the server
// ends.
const (
	wsNormalClosure = 1000 // DISCONNECT, or a refusal (the ERROR frame says why)
	wsGoingAway     = 1001 // the server shuts down
	wsProtocolError = 1002 // the client broke RFC 6455 (the ERROR frame says how)
)

// finishLocked queues a last frame (over any bound; none when last.raw is
// nil), then on WebSocket a Close frame with wsStatus (none when 0), and
// closes the session once the queue is written.
func (s *session) finishLocked(last outItem, wsStatus uint16) {
	if s.dead {
		return
	}
	if s.q == nil {
		s.q = queuePool.Get().(*queue)
	}
	items := [2]outItem{last}
	if s.websocket && wsStatus != 0 {
		items[1] = outItem{wsRaw: true, raw: []byte{0x88, 2, byte(wsStatus >> 8), byte(wsStatus)}}
	}
	for _, it := range items {
		if it.raw != nil {
			s.q.items = append(s.q.items, it)
			s.q.bytes += len(it.raw)
			s.queued++
		}
	}
	s.dead, s.closeAfter = true, true
	s.startWriterLocked()
}

// close ends the session now: it leaves the poller and the hub and closes
// the socket. It is safe to call more than once and from any goroutine.
func (s *session) close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed, s.dead = true, true
	subs := s.subs
	s.subs = nil
	s.dropQueueLocked()
	timer := s.timer
	stopExpiry := s.stopExpiry
	opened := s.connected && s.srv.cfg.Sessions != nil
	user := s.user.ID
	s.setReasonLocked("closed by the server")
	defer s.logClosed(s.user, s.reason)
	s.mu.Unlock()
	if opened {
		// Counted before remove below, so that Shutdown, once the
		// sessions are gone, waits for it.
		s.srv.beginClosedCall()
		defer s.srv.endClosedCall()
		defer s.srv.cfg.Sessions.Closed(user)
	}
	s.room.Broadcast()
	if timer != nil {
		timer.Stop()
	}
	if stopExpiry != nil {
		stopExpiry()
	}
	if s.rc != nil {
		s.srv.poll.remove(s)
	}
	for _, sub := range subs {
		s.srv.hub.Unsubscribe(&sub.Sub)
		sub.stop()
	}
	s.conn.Close()
	s.srv.remove(s)
}
