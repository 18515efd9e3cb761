//go:build !linux

package gateway

// poller is a stub where there is no epoll: add always fails, so every
// session reads with a goroutine of its own (readBlocking).
type poller struct{}

func newPoller() (*poller, error)        { return &poller{}, nil }
func (p *poller) add(s *session) error   { return errClosed }
func (p *poller) rearm(s *session) error { return errClosed }
func (p *poller) remove(s *session)      {}
func (p *poller) run()                   {}
func (p *poller) close()                 {}
