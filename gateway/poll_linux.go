//go:build linux

package gateway

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// poller watches idle sessions' sockets with one epoll set, so that an idle
// session costs no goroutine. A socket is registered one-shot: when it turns
// readable the poller wakes its session once, and the session re-arms it
// after reading everything that was there.
type poller struct {
	epfd int
	efd  int // eventfd that stops run

	mu       sync.Mutex // guards the following fields
	sessions map[int32]*session
	closed   bool

	done chan struct{} // closed when run returns
}

func newPoller() (*poller, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create: %w", err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("eventfd: %w", err)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(efd)}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
		unix.Close(epfd)
		unix.Close(efd)
		return nil, fmt.Errorf("epoll_ctl eventfd: %w", err)
	}
	return &poller{epfd: epfd, efd: efd, sessions: map[int32]*session{}, done: make(chan struct{})}, nil
}

const pollEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLONESHOT

// add starts watching s.fd.
func (p *poller) add(s *session) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return errClosed
	}
	ev := unix.EpollEvent{Events: pollEvents, Fd: int32(s.fd)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, s.fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl add: %w", err)
	}
	p.sessions[int32(s.fd)] = s
	return nil
}

// rearm watches s.fd again after a wake.
func (p *poller) rearm(s *session) error {
	// Under the lock, and only while s still owns its fd: a session closed
	// meanwhile has been removed, and its number may already belong to a
	// new connection that must not be armed on its behalf.
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions[int32(s.fd)] != s {
		return nil
	}
	ev := unix.EpollEvent{Events: pollEvents, Fd: int32(s.fd)}
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, s.fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl mod: %w", err)
	}
	return nil
}

// remove stops watching s.fd; call it before closing the socket, so that
// the number cannot be reused under the poller's feet.
func (p *poller) remove(s *session) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.sessions[int32(s.fd)] != s {
		return
	}
	delete(p.sessions, int32(s.fd))
	unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, s.fd, nil)
}

// run waits for readiness and wakes the sessions. It is owned by the Server
// and stopped by close.
func (p *poller) run() {
	defer close(p.done)
	events := make([]unix.EpollEvent, 256)
	for {
		n, err := unix.EpollWait(p.epfd, events, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return
		}
		for i := range events[:n] {
			fd := events[i].Fd
			if fd == int32(p.efd) {
				return
			}
			p.mu.Lock()
			s := p.sessions[fd]
			p.mu.Unlock()
			if s != nil {
				s.wake()
			}
		}
	}
}

// close stops run and releases the epoll set.
func (p *poller) close() {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return
	}
	p.closed = true
	p.mu.Unlock()
	var one = [8]byte{1}
	unix.Write(p.efd, one[:])
	<-p.done
	unix.Close(p.epfd)
	unix.Close(p.efd)
}
