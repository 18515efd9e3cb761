package accept

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// scripted is a net.Listener whose Accept returns the errors of script,
// one per call, then connections; once closed, net.ErrClosed.
type scripted struct {
	mu     sync.Mutex // guards the following fields
	script []error
	closed bool
}

func (s *scripted) Accept() (net.Conn, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, net.ErrClosed
	}
	if len(s.script) > 0 {
		err := s.script[0]
		s.script = s.script[1:]
		return nil, err
	}
	c, _ := net.Pipe()
	return c, nil
}

func (s *scripted) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closed = true
	return nil
}

func (s *scripted) Addr() net.Addr { return &net.TCPAddr{} }

// harness is a Listener over a scripted one, with a log, a registry and a
// clock that moves only by the pauses taken.
type harness struct {
	*Listener
	inner  *scripted
	log    bytes.Buffer
	reg    *prometheus.Registry
	clock  time.Time
	pauses []time.Duration
}

func newHarness(script ...error) *harness {
	h := &harness{inner: &scripted{script: script}, reg: prometheus.NewRegistry(), clock: time.Unix(1e9, 0)}
	h.Listener = New(h.inner, Config{Name: "test", Registerer: h.reg, Logger: slog.New(slog.NewTextHandler(&h.log, nil))})
	h.now = func() time.Time { return h.clock }
	h.after = func(d time.Duration) <-chan time.Time {
		h.pauses = append(h.pauses, d)
		h.clock = h.clock.Add(d)
		c := make(chan time.Time, 1)
		c <- h.clock
		return c
	}
	return h
}

func (h *harness) logged(level string) int {
	return strings.Count(h.log.String(), "level="+level)
}

func ms(ds ...int) []time.Duration {
	var out []time.Duration
	for _, d := range ds {
		out = append(out, time.Duration(d)*time.Millisecond)
	}
	return out
}

func wrap(errno syscall.Errno) error {
	return &net.OpError{Op: "accept", Net: "tcp", Err: &net.OpError{Err: fmt.Errorf("accept4: %w", errno)}}
}

type timeout struct{}

func (timeout) Error() string   { return "i/o timeout" }
func (timeout) Timeout() bool   { return true }
func (timeout) Temporary() bool { return true }

func TestAcceptRetries(t *testing.T) {
	for _, tc := range []struct {
		name   string
		script []error
		pauses []time.Duration
	}{
		{"out of descriptors", []error{wrap(syscall.EMFILE), wrap(syscall.EMFILE), wrap(syscall.ENFILE)}, ms(5, 10, 20)},
		{"aborted in the queue", []error{wrap(syscall.ECONNABORTED)}, ms(5)},
		{"no buffers", []error{wrap(syscall.ENOBUFS), wrap(syscall.ENOMEM)}, ms(5, 10)},
		{"timeout", []error{timeout{}}, ms(5)},
		{"pauses stop growing at 1s", []error{
			wrap(syscall.EMFILE), wrap(syscall.EMFILE), wrap(syscall.EMFILE), wrap(syscall.EMFILE),
			wrap(syscall.EMFILE), wrap(syscall.EMFILE), wrap(syscall.EMFILE), wrap(syscall.EMFILE),
			wrap(syscall.EMFILE), wrap(syscall.EMFILE),
		}, ms(5, 10, 20, 40, 80, 160, 320, 640, 1000, 1000)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(tc.script...)
			c, err := h.Accept()
			if err != nil {
				t.Fatalf("Accept() = %v, want a connection after the errors", err)
			}
			c.Close()
			if fmt.Sprint(h.pauses) != fmt.Sprint(tc.pauses) {
				t.Errorf("pauses = %v, want %v", h.pauses, tc.pauses)
			}
			if got := testutil.ToFloat64(h.errors); got != float64(len(tc.script)) {
				t.Errorf("parley_accept_errors_total = %v, want %d", got, len(tc.script))
			}
			if warn, info := h.logged("WARN"), h.logged("INFO"); warn != 1 || info != 1 {
				t.Errorf("logged %d warnings and %d infos, want 1 of each (the burst, then accepting again):\n%s", warn, info, h.log.String())
			}
		})
	}
}

func TestAcceptReturnsOtherErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"closed", net.ErrClosed},
		{"bad descriptor", wrap(syscall.EBADF)},
		{"unknown", errors.New("boom")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(tc.err)
			if _, err := h.Accept(); !errors.Is(err, tc.err) {
				t.Errorf("Accept() = %v, want %v", err, tc.err)
			}
			if got := testutil.ToFloat64(h.errors); got != 0 {
				t.Errorf("parley_accept_errors_total = %v, want 0", got)
			}
			if len(h.pauses) != 0 || h.log.Len() != 0 {
				t.Errorf("pauses %v, log %q; want none", h.pauses, h.log.String())
			}
		})
	}
}

// TestAcceptBurstLoggedOnce: failures less than burstGap apart are one
// burst, even with connections accepted in between.
func TestAcceptBurstLoggedOnce(t *testing.T) {
	h := newHarness(wrap(syscall.EMFILE))
	for range 3 {
		c, err := h.Accept()
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		h.clock = h.clock.Add(burstGap / 2)
		h.inner.script = []error{wrap(syscall.EMFILE)}
	}
	if warn, info := h.logged("WARN"), h.logged("INFO"); warn != 1 || info != 1 {
		t.Errorf("after failures %v apart: %d warnings, %d infos; want 1 and 1:\n%s", burstGap/2, warn, info, h.log.String())
	}
	h.clock = h.clock.Add(burstGap)
	c, err := h.Accept()
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if warn, info := h.logged("WARN"), h.logged("INFO"); warn != 2 || info != 2 {
		t.Errorf("after a quiet %v: %d warnings, %d infos; want a second burst logged:\n%s", burstGap, warn, info, h.log.String())
	}
	if got := testutil.ToFloat64(h.errors); got != 4 {
		t.Errorf("parley_accept_errors_total = %v, want 4", got)
	}
}

// TestAcceptCloseEndsPause: Close during a pause returns the listener's
// closed error at once, not after the pause.
func TestAcceptCloseEndsPause(t *testing.T) {
	h := newHarness(wrap(syscall.EMFILE))
	pausing := make(chan struct{})
	h.after = func(time.Duration) <-chan time.Time {
		close(pausing)
		return nil // a pause that never ends by itself
	}
	done := make(chan error, 1)
	go func() {
		_, err := h.Accept()
		done <- err
	}()
	<-pausing
	h.Close()
	if err := <-done; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept() after Close = %v, want net.ErrClosed", err)
	}
}

// TestAcceptSharedCounter: listeners of one name share their counter,
// and each name has its own series.
func TestAcceptSharedCounter(t *testing.T) {
	reg := prometheus.NewRegistry()
	a := New(&scripted{}, Config{Name: "stomp", Registerer: reg})
	b := New(&scripted{}, Config{Name: "stomp", Registerer: reg})
	c := New(&scripted{}, Config{Name: "http", Registerer: reg})
	a.errors.Inc()
	b.errors.Inc()
	c.errors.Inc()
	want := `
# HELP parley_accept_errors_total Failed accepts of new connections (e.g. out of file descriptors), each retried after a pause, by listener.
# TYPE parley_accept_errors_total counter
parley_accept_errors_total{listener="http"} 1
parley_accept_errors_total{listener="stomp"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "parley_accept_errors_total"); err != nil {
		t.Error(err)
	}
}
