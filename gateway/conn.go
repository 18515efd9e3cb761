package gateway

import (
	"bufio"
	"errors"
	"io"
	"syscall"
	"time"

	"parley/stomp"

	"github.com/gobwas/ws"
)

// errIdle is returned by a connReader in non-blocking mode when the socket
// has nothing to read: the session is idle and gives its buffers back.
var errIdle = errors.New("gateway: idle")

// errClosed reports a closed poller or session.
var errClosed = errors.New("gateway: closed")

// readBufSize is the size of the pooled read buffers.
const readBufSize = 4096

// readState is what a session needs while it reads, taken from a pool on
// each wake and given back when the session is idle again.
type readState struct {
	cr   connReader
	raw  *bufio.Reader // over cr
	ws   wsReader      // WebSocket only: payloads of raw
	sbuf *bufio.Reader // WebSocket only: over ws
	sr   *stomp.Reader // over raw (TCP) or sbuf (WebSocket)
}

func newReadState(websocket bool, lim stomp.Limits) *readState {
	rs := &readState{}
	rs.cr.readFn = func(fd uintptr) bool {
		rs.cr.n, rs.cr.err = syscall.Read(int(fd), rs.cr.p)
		return true // never wait: this is the non-blocking read
	}
	rs.raw = bufio.NewReaderSize(&rs.cr, readBufSize)
	if websocket {
		rs.ws.src = rs.raw
		rs.ws.rs = rs
		rs.sbuf = bufio.NewReaderSize(&rs.ws, readBufSize)
		rs.sr = stomp.NewReader(rs.sbuf, lim)
	} else {
		rs.sr = stomp.NewReader(rs.raw, lim)
	}
	return rs
}

// reset points rs at s, with nothing left of the session that used it
// before: the readers are rebuilt from their wiring (what newReadState set
// once), so that every other field, one added later included, starts at
// its zero value. A session that ended inside a frame leaves its frame's
// start time, a partial WebSocket frame, a stale read result; none of it
// may reach the next session.
func (rs *readState) reset(s *session) {
	rs.cr = connReader{readFn: rs.cr.readFn, s: s}
	rs.ws = wsReader{src: rs.ws.src, rs: rs.ws.rs}
	rs.raw.Reset(&rs.cr)
	if s.websocket {
		rs.ws.s = s
		rs.sbuf.Reset(&rs.ws)
		rs.sr.Reset(rs.sbuf)
	} else {
		rs.sr.Reset(rs.raw)
	}
	rs.sr.SetVersion(s.readVersion())
}

// release drops the references to s before rs goes back to the pool.
func (rs *readState) release() {
	rs.cr.s, rs.ws.s = nil, nil
	rs.raw.Reset(nil)
	if rs.sbuf != nil {
		rs.sbuf.Reset(nil)
	}
}

// idle reports whether nothing is buffered at any layer: the next octet on
// the socket starts a new frame.
func (rs *readState) idle() bool {
	if rs.raw.Buffered() > 0 {
		return false
	}
	return rs.sbuf == nil || rs.sbuf.Buffered() == 0 && rs.ws.remaining == 0
}

// arm makes the next read from the socket non-blocking: called between
// frames, when rs is idle.
func (rs *readState) arm() {
	rs.cr.nonblock = true
	rs.ws.fresh = true
}

// connReader reads a session's socket: once without waiting right after a
// wake (errIdle when there is nothing), then, inside a frame, blocking until
// the rest arrives or the frame timeout passes. The frame timeout counts
// only the time the reader waits for octets it is ready to read: from its
// first wait for the rest of a frame to the frame's end. Neither the time
// the session spends acting on a frame (a SEND waiting for the store)
// while the next one's octets sit in its buffers, nor the time between
// frames, counts.
type connReader struct {
	s        *session
	nonblock bool
	blocking bool // the session's reader is readBlocking: never non-blocking

	readFn func(fd uintptr) bool // the non-blocking read, made once
	p      []byte
	n      int
	err    error

	// frameStart is when the reader first waited for the rest of the
	// current frame: the frame timeout runs from there, so a client that
	// trickles a frame byte by byte cannot hold the reader for ever. Zero
	// between frames (set back when a frame ends and at each read
	// between frames).
	frameStart time.Time
}

func (c *connReader) Read(p []byte) (int, error) {
	s := c.s
	if len(s.prefix) > 0 {
		n := copy(p, s.prefix)
		s.prefix = s.prefix[n:]
		if len(s.prefix) == 0 {
			s.prefix = nil
		}
		c.nonblock = false
		return n, nil
	}
	if c.nonblock {
		// Between frames: no frame has begun, so no frame timeout runs.
		// The deadline a frame before this one left on the socket goes:
		// it would fail this read once it passed (a non-blocking read
		// checks it too), a frame timeout after that frame, however
		// whole the frames since.
		c.nonblock = false
		c.frameStart = time.Time{}
		if s.readDeadline {
			s.conn.SetReadDeadline(time.Time{})
			s.readDeadline = false
		}
		if c.blocking || s.rc == nil {
			// A blocking reader waits for the first octets of the next
			// frame as long as they take: the connect timeout and the
			// heart-beats bound a silent client, as they do when the
			// poller waits.
			return s.conn.Read(p)
		}
		c.p = p
		err := s.rc.Read(c.readFn)
		c.p = nil
		if err != nil {
			return 0, err
		}
		switch {
		case c.err == syscall.EAGAIN || c.err == syscall.EINTR:
			return 0, errIdle
		case c.err != nil:
			return 0, c.err
		case c.n == 0:
			return 0, io.EOF
		}
		return c.n, nil
	}
	if c.frameStart.IsZero() {
		c.frameStart = time.Now()
	}
	s.conn.SetReadDeadline(c.frameStart.Add(s.frameTimeout()))
	s.readDeadline = true
	return s.conn.Read(p)
}

// wsReader turns a client's WebSocket frames into the STOMP byte stream:
// the payloads of data frames, unmasked and concatenated, whatever their
// message boundaries. It answers pings and close frames itself.
type wsReader struct {
	src       *bufio.Reader
	rs        *readState
	s         *session
	remaining int64 // payload octets of the current data frame left to read
	mask      [4]byte
	pos       int  // offset in the current payload, for the mask
	fresh     bool // no STOMP octet read since the last frame boundary
	ctl       [125]byte
}

// errWSClose is returned when the client sent a close frame.
var errWSClose = errors.New("gateway: websocket closed by the client")

// errWSProtocol wraps WebSocket protocol violations.
var errWSProtocol = errors.New("gateway: websocket protocol error")

func (w *wsReader) Read(p []byte) (int, error) {
	for w.remaining == 0 {
		if err := w.next(); err != nil {
			return 0, err
		}
	}
	if int64(len(p)) > w.remaining {
		p = p[:w.remaining]
	}
	n, err := w.src.Read(p)
	ws.Cipher(p[:n], w.mask, w.pos)
	w.pos += n
	w.remaining -= int64(n)
	if n > 0 {
		w.fresh = false
	}
	return n, err
}

// next reads frame headers until the next data frame with a payload,
// handling control frames on the way.
func (w *wsReader) next() error {
	var hdr [14]byte
	if _, err := io.ReadFull(w.src, hdr[:2]); err != nil {
		return err
	}
	if hdr[0]&0x70 != 0 {
		return errors.Join(errWSProtocol, errors.New("reserved bits set: no extension was negotiated"))
	}
	if hdr[1]&0x80 == 0 {
		return errors.Join(errWSProtocol, errors.New("client frame not masked"))
	}
	op := ws.OpCode(hdr[0] & 0x0f)
	length := int64(hdr[1] & 0x7f)
	extra := 0
	switch length {
	case 126:
		extra = 2
	case 127:
		extra = 8
	}
	if _, err := io.ReadFull(w.src, hdr[2:2+extra+4]); err != nil {
		return err
	}
	switch extra {
	case 2:
		length = int64(hdr[2])<<8 | int64(hdr[3])
	case 8:
		length = 0
		for _, b := range hdr[2:10] {
			length = length<<8 | int64(b)
		}
		if length < 0 {
			return errors.Join(errWSProtocol, errors.New("frame length overflows"))
		}
	}
	copy(w.mask[:], hdr[2+extra:])
	w.pos = 0
	switch op {
	case ws.OpContinuation, ws.OpText, ws.OpBinary:
		// RFC 6455 §5.4: a continuation continues a message begun by a
		// data frame without FIN, and no new message begins before that
		// one's last frame (control frames may come in between).
		// Whether a message is open outlives this read state: the
		// session may go idle between the fragments of one message.
		switch {
		case op == ws.OpContinuation && !w.s.wsFragmented:
			return errors.Join(errWSProtocol, errors.New("continuation frame with no message started"))
		case op != ws.OpContinuation && w.s.wsFragmented:
			return errors.Join(errWSProtocol, errors.New("new message before the last one's final frame"))
		}
		w.s.wsFragmented = hdr[0]&0x80 == 0
		w.remaining = length
		return nil
	case ws.OpClose, ws.OpPing, ws.OpPong:
		if length > 125 || hdr[0]&0x80 == 0 {
			return errors.Join(errWSProtocol, errors.New("control frame fragmented or over 125 octets"))
		}
		payload := w.ctl[:length]
		if _, err := io.ReadFull(w.src, payload); err != nil {
			return err
		}
		ws.Cipher(payload, w.mask, 0)
		switch op {
		case ws.OpClose:
			w.s.closeWebSocket(payload)
			return errWSClose
		case ws.OpPing:
			w.s.pong(payload)
		}
		// Between STOMP frames, a control frame leaves the session idle:
		// the next read must not wait.
		if w.fresh && w.src.Buffered() == 0 && w.rs.sbuf.Buffered() == 0 {
			w.rs.cr.nonblock = true
		}
		return nil
	default:
		return errors.Join(errWSProtocol, errors.New("unknown opcode"))
	}
}

// appendWSHeader writes the header of an unmasked server frame of opcode op
// and n payload octets into the 10 octets at dst[at:], and returns how many
// octets of those 10 the header did not use (the payload follows at
// dst[at+10:] and must move back by that much).
func appendWSHeader(dst []byte, at int, op ws.OpCode, n int) int {
	h := dst[at : at+10]
	switch {
	case n < 126:
		h[8], h[9] = 0x80|byte(op), byte(n)
		return 8
	case n < 1<<16:
		h[6], h[7], h[8], h[9] = 0x80|byte(op), 126, byte(n>>8), byte(n)
		return 6
	default:
		h[0], h[1] = 0x80|byte(op), 127
		for i := 0; i < 8; i++ {
			h[9-i] = byte(n >> (8 * i))
		}
		return 0
	}
}
