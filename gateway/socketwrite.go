package gateway

import (
	"errors"
	"io"
	"os"
	"syscall"
	"time"
)

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
