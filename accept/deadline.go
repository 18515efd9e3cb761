package accept

import (
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// Sweeper enforces the read and write deadlines of the connections it
// wraps at a coarse grain: SetReadDeadline and SetWriteDeadline only note
// the time, and a goroutine of the Sweeper looks over its connections
// every Period and expires, on the socket, those whose deadline has
// passed. A deadline so fires between its time and one Period later, as
// the socket's own would at its time; a blocked Read or Write then
// returns the same timeout error (os.ErrDeadlineExceeded).
//
// It is for net/http: a server with ReadTimeout, WriteTimeout and
// IdleTimeout moves four deadlines on every request of a keep-alive
// connection, and each move of a socket's deadline re-arms a runtime
// timer: 3-5% of the CPU of a hot REST read. A deadline already passed
// (not after the last sweep, such as the time.Unix(1, 0) net/http sets to
// wake a pending read) goes to the socket at once.
//
// A connection net/http hijacks (a WebSocket) keeps exact deadlines: the
// server's ConnState hook calls Exact, after which the wrapper passes its
// deadlines straight to the socket and the Sweeper forgets it.
type Sweeper struct {
	period time.Duration
	lastNS atomic.Int64 // time of the last sweep (of the start at first), Unix ns

	mu    sync.Mutex // guards conns
	conns map[*sweptConn]struct{}

	stop chan struct{}
	done chan struct{}
}

// NewSweeper starts a Sweeper that looks over its connections every
// period. Close stops it.
func NewSweeper(period time.Duration) *Sweeper {
	s := &Sweeper{period: period, conns: map[*sweptConn]struct{}{}, stop: make(chan struct{}), done: make(chan struct{})}
	s.lastNS.Store(time.Now().UnixNano())
	go s.run()
	return s
}

// SweepPeriod is the period for a server whose shortest timeout is d: a
// sixteenth of it, from 1 ms to 1 s, so that a deadline fires at most ~6%
// late. Zero timeouts (none) are skipped; with none at all, 1 s.
func SweepPeriod(timeouts ...time.Duration) time.Duration {
	p := time.Second
	for _, d := range timeouts {
		if d > 0 {
			p = min(p, d/16)
		}
	}
	return max(p, time.Millisecond)
}

// Close stops the sweeps. Connections wrapped before keep their noted
// deadlines, which no longer fire.
func (s *Sweeper) Close() {
	select {
	case <-s.stop:
	default:
		close(s.stop)
	}
	<-s.done
}

// Len returns the number of connections the Sweeper looks over.
func (s *Sweeper) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

func (s *Sweeper) run() {
	defer close(s.done)
	t := time.NewTicker(s.period)
	defer t.Stop()
	var batch []*sweptConn
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			batch = s.sweep(now, batch[:0])
		}
	}
}

// sweep expires the deadlines passed by now. It copies the set first so
// that no connection's lock is taken under s.mu.
func (s *Sweeper) sweep(now time.Time, batch []*sweptConn) []*sweptConn {
	s.mu.Lock()
	for c := range s.conns {
		batch = append(batch, c)
	}
	s.mu.Unlock()
	for _, c := range batch {
		c.expire(now)
	}
	clear(batch)
	s.lastNS.Store(now.UnixNano())
	return batch
}

// Wrap returns c with its deadlines swept by s.
func (s *Sweeper) Wrap(c net.Conn) net.Conn {
	sc := &sweptConn{Conn: c, s: s}
	s.mu.Lock()
	s.conns[sc] = struct{}{}
	s.mu.Unlock()
	return sc
}

func (s *Sweeper) forget(c *sweptConn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
}

// Exact makes a connection Wrap returned keep exact deadlines from now
// on, set on the socket, and the Sweeper forget it. Other connections
// are left alone. For http.Server.ConnState on http.StateHijacked.
func Exact(c net.Conn) {
	sc, ok := c.(*sweptConn)
	if !ok {
		return
	}
	sc.mu.Lock()
	sc.exact = true
	r, w := sc.read, sc.write
	sc.mu.Unlock()
	sc.s.forget(sc)
	// What the sweeps left on the socket gives way to what was asked.
	sc.Conn.SetReadDeadline(r.at)
	sc.Conn.SetWriteDeadline(w.at)
}

// sweptConn is a connection whose deadlines a Sweeper enforces.
type sweptConn struct {
	net.Conn
	s *Sweeper

	mu          sync.Mutex // guards the following fields
	read, write deadline
	exact       bool // hijacked: deadlines go to the socket
}

// deadline is one direction's deadline.
type deadline struct {
	at     time.Time // asked for; zero: none
	onSock bool      // the socket has a deadline set by the wrapper (expired)
}

// set notes t as the deadline, setting it on the socket through set if
// it is already passed or the socket holds one of ours.
func (c *sweptConn) set(d *deadline, t time.Time, set func(time.Time) error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	d.at = t
	if c.exact {
		return set(t)
	}
	if !t.IsZero() && t.UnixNano() <= c.s.lastNS.Load() {
		d.onSock = true
		return set(t)
	}
	if d.onSock {
		d.onSock = false
		return set(time.Time{})
	}
	return nil
}

// expired is the deadline a sweep sets on a socket: long passed, as
// net/http's own (aLongTimeAgo).
var expired = time.Unix(1, 0)

// expire sets on the socket the deadlines passed by now.
func (c *sweptConn) expire(now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.exact {
		return
	}
	if d := &c.read; !d.onSock && !d.at.IsZero() && !now.Before(d.at) {
		d.onSock = true
		c.Conn.SetReadDeadline(expired)
	}
	if d := &c.write; !d.onSock && !d.at.IsZero() && !now.Before(d.at) {
		d.onSock = true
		c.Conn.SetWriteDeadline(expired)
	}
}

func (c *sweptConn) SetReadDeadline(t time.Time) error {
	return c.set(&c.read, t, c.Conn.SetReadDeadline)
}

func (c *sweptConn) SetWriteDeadline(t time.Time) error {
	return c.set(&c.write, t, c.Conn.SetWriteDeadline)
}

func (c *sweptConn) SetDeadline(t time.Time) error {
	err := c.SetReadDeadline(t)
	if werr := c.SetWriteDeadline(t); err == nil {
		err = werr
	}
	return err
}

// Close closes the connection and makes the Sweeper forget it.
func (c *sweptConn) Close() error {
	c.s.forget(c)
	return c.Conn.Close()
}

// NetConn returns the socket, as tls.Conn's NetConn does: a hijacker
// that wants the socket itself (its descriptor, vectored writes) takes it
// after Exact.
func (c *sweptConn) NetConn() net.Conn { return c.Conn }

// CloseWrite shuts the sending side, as net/http does before closing a
// connection whose request body it did not read to the end.
func (c *sweptConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// ReadFrom lets net/http send a file with sendfile, as it does on a
// *net.TCPConn.
func (c *sweptConn) ReadFrom(r io.Reader) (int64, error) {
	if rf, ok := c.Conn.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(struct{ io.Writer }{c.Conn}, r)
}
