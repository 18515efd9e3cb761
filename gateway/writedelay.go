package gateway

import (
	"time"
)

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
