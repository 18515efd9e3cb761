package gateway

import "sync"

// writerPool is the server's fixed set of writer goroutines
// (Config.Writers). A session with frames to write joins the back of its
// line (push); a worker takes the session at the front and writes what it
// has queued without waiting for its client (writeTurn). A session with
// more queued by then joins the back again, so that one pass over a big
// room writes each session once, in the order they became ready, with
// everything queued for it since its last write. A socket that does not
// take a whole write at once gets the rest written by a goroutine of the
// session's own (writeOwn): no client holds up a worker's other sessions.
type writerPool struct {
	mu     sync.Mutex // guards the following fields
	ready  []*session // sessions waiting for a worker, oldest first from head
	head   int
	idle   int       // workers waiting on cond
	closed bool      // close was called: workers return once ready is empty
	cond   sync.Cond // on mu: signalled when ready grows, broadcast by close

	wg sync.WaitGroup // the workers
}

// poolWorker is what one worker keeps from one session to the next.
type poolWorker struct {
	bp    *[]byte // the write buffer
	spare *queue  // an empty queue to leave in a session's place, or nil
}

// newWriterPool starts n workers.
func newWriterPool(n int) *writerPool {
	p := &writerPool{}
	p.cond.L = &p.mu
	p.wg.Add(n)
	for range n {
		go p.run()
	}
	return p
}

// push puts s at the back of the line; the caller has set s.writing,
// which stays set until a worker's turn at s is over. It reports false
// once the pool is closed: s is not taken.
func (p *writerPool) push(s *session) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.ready = append(p.ready, s)
	if p.idle > 0 {
		p.cond.Signal()
	}
	return true
}

// pop takes the session at the front of the line, waiting for one; nil
// when the pool is closed and the line empty.
func (p *writerPool) pop() *session {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.head == len(p.ready) {
		if p.closed {
			return nil
		}
		p.idle++
		p.cond.Wait()
		p.idle--
	}
	s := p.ready[p.head]
	p.ready[p.head] = nil
	p.head++
	switch {
	case p.head == len(p.ready):
		p.ready, p.head = p.ready[:0], 0
	case p.head >= 1024 && p.head*2 >= len(p.ready):
		// Move the line to the front, so that a line that never
		// empties does not grow its slice for ever.
		n := copy(p.ready, p.ready[p.head:])
		clear(p.ready[n:])
		p.ready, p.head = p.ready[:n], 0
	}
	return s
}

// run is one worker, owned by the Server and stopped by close.
func (p *writerPool) run() {
	defer p.wg.Done()
	w := &poolWorker{bp: bufPool.Get().(*[]byte)}
	for {
		s := p.pop()
		if s == nil {
			break
		}
		s.writeTurn(w)
	}
	putQueue(w.spare)
	putBuf(w.bp)
}

// close stops the workers once the sessions in line have had their turn,
// and waits for them. A session that becomes ready after close gets a
// writer goroutine of its own (launch).
func (p *writerPool) close() {
	p.mu.Lock()
	p.closed = true
	p.cond.Broadcast()
	p.mu.Unlock()
	p.wg.Wait()
}
