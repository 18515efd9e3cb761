package accept

import (
	"errors"
	"log/slog"
	"net"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Config configures a Listener.
type Config struct {
	// Name labels the listener in logs and in
	// parley_accept_errors_total{listener=Name}, e.g. "http" or "stomp".
	Name string
	// Registerer, when set, registers parley_accept_errors_total for
	// Name. Listeners of the same Name share one counter.
	Registerer prometheus.Registerer
	// Logger logs the start of each burst of failures and the first
	// connection accepted after it. Default slog.Default().
	Logger *slog.Logger
	// Sweeper, when set, wraps every connection accepted: its deadlines
	// are enforced by the Sweeper's sweeps (see Sweeper). Nil: left as
	// they are.
	Sweeper *Sweeper
}

// The pause before retrying grows from minDelay, doubling, to maxDelay;
// failures less than burstGap apart are one burst, logged once.
const (
	minDelay = 5 * time.Millisecond
	maxDelay = time.Second
	burstGap = 10 * time.Second
)

// Listener is a net.Listener whose Accept waits out the errors that pass
// (see Passing) instead of returning them.
type Listener struct {
	net.Listener
	name   string
	log    *slog.Logger
	errors prometheus.Counter
	sweep  *Sweeper      // nil: connections are not wrapped
	closed chan struct{} // closed by Close: ends a pause at once
	once   sync.Once

	// Time, replaced by tests.
	now   func() time.Time
	after func(time.Duration) <-chan time.Time

	mu          sync.Mutex // guards the following fields
	lastFailure time.Time  // of the current burst; zero before any
	failures    int        // in the current burst
	recovered   bool       // the current burst's first success is logged
}

// New returns ln accepting through passing errors. Closing it closes ln.
func New(ln net.Listener, cfg Config) *Listener {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Listener{
		Listener: ln,
		name:     cfg.Name,
		log:      cfg.Logger,
		errors:   newCounter(cfg.Registerer, cfg.Name),
		sweep:    cfg.Sweeper,
		closed:   make(chan struct{}),
		now:      time.Now,
		after:    time.After,
	}
}

func newCounter(reg prometheus.Registerer, name string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{
		Name:        "parley_accept_errors_total",
		Help:        "Failed accepts of new connections (e.g. out of file descriptors), each retried after a pause, by listener.",
		ConstLabels: prometheus.Labels{"listener": name},
	})
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
			return are.ExistingCollector.(prometheus.Counter)
		}
		panic(err)
	}
	return c
}

// Accept waits for the next connection. An error that passes is counted
// and retried after a pause; Accept returns only the others, and the
// listener's closed error once Close is called, even during a pause.
func (l *Listener) Accept() (net.Conn, error) {
	var delay time.Duration
	for {
		c, err := l.Listener.Accept()
		if err == nil {
			l.succeeded()
			if l.sweep != nil {
				c = l.sweep.Wrap(c)
			}
			return c, nil
		}
		select {
		case <-l.closed:
			return nil, err
		default:
		}
		if !Passing(err) {
			return nil, err
		}
		l.failed(err)
		delay = min(max(2*delay, minDelay), maxDelay)
		select {
		case <-l.after(delay):
		case <-l.closed:
			// The listener is closed: its Accept says so.
		}
	}
}

// failed counts a failure and logs it if it begins a burst.
func (l *Listener) failed(err error) {
	l.errors.Inc()
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if l.failures == 0 || now.Sub(l.lastFailure) >= burstGap {
		l.failures, l.recovered = 0, false
		l.log.Warn("accept failed; retrying with pauses up to 1s (counted in parley_accept_errors_total)",
			"listener", l.name, "err", err)
	}
	l.failures++
	l.lastFailure = now
}

// succeeded logs the first connection accepted in a burst of failures.
func (l *Listener) succeeded() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.failures > 0 && !l.recovered {
		l.recovered = true
		l.log.Info("accepting again", "listener", l.name, "failures", l.failures)
	}
}

// Close closes the listener; an Accept pausing returns at once.
func (l *Listener) Close() error {
	err := l.Listener.Close()
	l.once.Do(func() { close(l.closed) })
	return err
}

// Passing reports whether an accept error passes: a timeout, a lack of
// descriptors, buffers or memory, or a connection that failed while it
// waited in the queue (on Linux, accept reports the pending network
// errors of the new connection, and accept(2) says to retry those).
func Passing(err error) bool {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return true
	}
	var errno syscall.Errno
	if !errors.As(err, &errno) {
		return false
	}
	switch errno {
	case syscall.EMFILE, syscall.ENFILE, syscall.ENOBUFS, syscall.ENOMEM,
		syscall.ECONNABORTED, syscall.ECONNRESET, syscall.EINTR, syscall.EAGAIN, syscall.ETIMEDOUT,
		syscall.EPROTO, syscall.ENOPROTOOPT, syscall.EOPNOTSUPP,
		syscall.ENETDOWN, syscall.ENETUNREACH, syscall.EHOSTDOWN, syscall.EHOSTUNREACH:
		return true
	}
	return false
}
