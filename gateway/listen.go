package gateway

import (
	"errors"
	"net"

	"parley/accept"
)

// Serve accepts raw TCP STOMP connections on ln until ln is closed or
// Shutdown is called; it then returns nil. An accept error that passes
// (out of file descriptors, a connection aborted in the queue: see
// accept.Passing) does not end it: it is logged once per burst, counted in
// parley_accept_errors_total{listener="stomp"}, and retried after a pause
// of 5 ms doubling to 1 s. Any other error ends Serve and is returned.
func (srv *Server) Serve(ln net.Listener) error {
	al := accept.New(ln, accept.Config{Name: "stomp", Registerer: srv.cfg.Registerer, Logger: srv.log})
	srv.mu.Lock()
	if srv.shutdown {
		srv.mu.Unlock()
		ln.Close()
		return nil
	}
	srv.listeners[al] = struct{}{}
	srv.mu.Unlock()
	defer func() {
		srv.mu.Lock()
		delete(srv.listeners, al)
		srv.mu.Unlock()
	}()
	for {
		c, err := al.Accept()
		if err != nil {
			srv.mu.Lock()
			down := srv.shutdown
			srv.mu.Unlock()
			if down || errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		srv.start(c, false, nil)
	}
}
