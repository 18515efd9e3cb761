package gateway

// The Sessions.Closed calls are counted under Server.mu, so that Shutdown
// returns only after the last one (cluster mode's Closed removes the
// user's presence from Redis, whose client the caller closes after
// Shutdown). A count rather than a sync.WaitGroup: a call may begin while
// Shutdown waits, from a session that was removed while its CONNECT was
// being checked, and a WaitGroup must not be added to from zero during a
// Wait. Such a call, begun after Shutdown stopped waiting, is not waited
// for: it can only come from a CONNECT whose check passed as Shutdown
// began.

// goClosed reports the end of the session of an Opened user on a
// goroutine of its own, which Shutdown waits for.
func (srv *Server) goClosed(userID string) {
	srv.beginClosedCall()
	go func() {
		defer srv.endClosedCall()
		srv.cfg.Sessions.Closed(userID)
	}()
}

// beginClosedCall counts a Sessions.Closed call about to run; the caller
// calls endClosedCall once it returns.
func (srv *Server) beginClosedCall() {
	srv.mu.Lock()
	srv.closedCalls++
	srv.mu.Unlock()
}

func (srv *Server) endClosedCall() {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	srv.closedCalls--
	if srv.closedCalls == 0 && srv.closedIdle != nil {
		close(srv.closedIdle)
		srv.closedIdle = nil
	}
}

// awaitClosedCalls waits until no Sessions.Closed call is under way.
func (srv *Server) awaitClosedCalls() {
	srv.mu.Lock()
	if srv.closedCalls == 0 {
		srv.mu.Unlock()
		return
	}
	if srv.closedIdle == nil {
		srv.closedIdle = make(chan struct{})
	}
	idle := srv.closedIdle
	srv.mu.Unlock()
	<-idle
}
