package redis

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// ErrDown is the error of every call on a client while its Health holds
// Redis down: the call fails at once instead of waiting for a server
// that does not answer. It is a CodeUnavailable parley.Error.
var ErrDown error = parley.Errorf(parley.CodeUnavailable, "redis is not answering")

// HealthConfig configures a Health. Zero fields take the documented
// defaults.
type HealthConfig struct {
	// Interval is how often the probe pings Redis. Default 250 ms.
	Interval time.Duration
	// Timeout bounds each ping: a ping unanswered for that long marks
	// Redis down. A Redis that answers slower than this under its own load
	// is treated as hung. Default 1 s.
	Timeout time.Duration
	// Logger logs the start and the end of each spell. Default
	// slog.Default().
	Logger *slog.Logger
	// Registerer receives parley_redis_up and
	// parley_redis_refused_total when not nil.
	Registerer prometheus.Registerer
}

// Health is a circuit breaker in front of a Redis client: it tells a hung
// Redis (a stopped or swapping server, a network black hole: the sockets
// stay open and nothing answers) from a live one, so that nothing waits
// for it while it hangs. A probe on a connection of its own (not queued
// behind the calls hung in the client's pool) pings Redis every
// Interval; a ping unanswered within Timeout marks Redis down, and from
// then on every command and pipeline of the client fails at once with
// ErrDown (a hook on the client), which each caller already handles as a
// Redis failure: the hot data reads the store, the relay broadcasts,
// presence misses a beat. A call of the client that times out makes the
// probe ping at once, so a hang is noticed within about Timeout.
//
// When a ping is answered again, the recovery steps (OnRecover) run, with
// a context that lets their own calls through, before Redis is marked up:
// the hot data's lost invalidations and owed writes are done before any
// read is served from Redis again. A step that fails keeps Redis down
// until the next ping.
type Health struct {
	probe *goredis.Client // a connection of its own
	cfg   HealthConfig
	log   *slog.Logger
	m     healthMetrics

	state atomic.Int32  // healthUp, healthDown or healthRecovering
	kick  chan struct{} // wakes the probe (cap 1)
	stop  chan struct{} // closed by Close
	done  chan struct{} // closed when the probe has returned

	cmu   sync.Mutex                // guards conns
	conns map[*trackedConn]struct{} // the client's open connections

	mu      sync.Mutex                    // guards the following fields
	down    chan struct{}                 // closed while Redis is not up; replaced when it is
	recover []func(context.Context) error // the recovery steps, in order
	since   time.Time                     // when the spell began
}

const (
	healthUp int32 = iota
	healthDown
	healthRecovering
)

// recoveryKey marks the context of a recovery step: its calls go through
// while Redis is recovering.
type recoveryKey struct{}

// NewHealth starts watching the Redis of rdb and installs its hook on
// rdb. Close it before rdb.
func NewHealth(rdb *goredis.Client, cfg HealthConfig) *Health {
	if cfg.Interval <= 0 {
		cfg.Interval = 250 * time.Millisecond
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	o := rdb.Options()
	probe := &goredis.Options{ // the same server, as the same user; one connection, one try a ping
		Network: o.Network, Addr: o.Addr, Username: o.Username, Password: o.Password, CredentialsProvider: o.CredentialsProvider,
		DB: o.DB, TLSConfig: o.TLSConfig, Protocol: o.Protocol, ClientName: o.ClientName,
		DialTimeout: cfg.Timeout, ReadTimeout: cfg.Timeout, WriteTimeout: cfg.Timeout,
		PoolSize: 1, MaxRetries: -1, ContextTimeoutEnabled: true,
	}
	h := &Health{
		probe: goredis.NewClient(probe),
		cfg:   cfg,
		log:   cfg.Logger,
		m:     newHealthMetrics(cfg.Registerer),
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
		done:  make(chan struct{}),
		down:  make(chan struct{}),
		conns: map[*trackedConn]struct{}{},
	}
	h.m.up.Set(1)
	rdb.AddHook(h)
	go h.loop()
	return h
}

// recoveryTime bounds each recovery step: five pings' worth, 5 s at
// least (a replay of what a long spell owes is one round trip of many
// scripts).
func recoveryTime(timeout time.Duration) time.Duration { return max(5*timeout, 5*time.Second) }

// OnRecover adds a recovery step: it runs after Redis answers again and
// before it is marked up, on the probe's goroutine, with a context
// (bounded by recoveryTime) whose calls go through. An error keeps Redis
// down; the step runs again with the others after the next good ping.
// Steps are added before the first spell (at start-up).
func (h *Health) OnRecover(step func(ctx context.Context) error) {
	h.mu.Lock()
	h.recover = append(h.recover, step)
	h.mu.Unlock()
}

// Up reports whether Redis is up: calls of the client go through.
func (h *Health) Up() bool { return h == nil || h.state.Load() == healthUp }

// Down returns a channel closed once Redis is not up (at once if it is
// not up now): who waits for Redis selects on it and stops waiting. A nil
// Health is never down.
func (h *Health) Down() <-chan struct{} {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.down
}

// Close stops the probe and closes its connection.
func (h *Health) Close() error {
	close(h.stop)
	<-h.done
	return h.probe.Close()
}

// allowed reports whether a call with ctx may go to Redis now.
func (h *Health) allowed(ctx context.Context) bool {
	switch h.state.Load() {
	case healthUp:
		return true
	case healthRecovering:
		return ctx.Value(recoveryKey{}) != nil
	}
	return false
}

// suspect wakes the probe after a call that timed out.
func (h *Health) suspect(err error) {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() || errors.Is(err, context.DeadlineExceeded) {
		select {
		case h.kick <- struct{}{}:
		default:
		}
	}
}

// DialHook implements goredis.Hook: the client's connections are kept
// track of, so that marking Redis down can cut the calls hung on them.
func (h *Health) DialHook(next goredis.DialHook) goredis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := next(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		tc := &trackedConn{Conn: c, h: h}
		h.cmu.Lock()
		h.conns[tc] = struct{}{}
		h.cmu.Unlock()
		if sc, ok := c.(syscall.Conn); ok {
			// The client checks an idle connection through its socket
			// before it uses it again: keep that.
			return &trackedSysConn{trackedConn: tc, sc: sc}, nil
		}
		return tc, nil
	}
}

// trackedSysConn is a trackedConn over a connection with a socket.
type trackedSysConn struct {
	*trackedConn
	sc syscall.Conn
}

// SyscallConn implements syscall.Conn.
func (c *trackedSysConn) SyscallConn() (syscall.RawConn, error) { return c.sc.SyscallConn() }

// trackedConn is a connection of the client, known to its Health until
// it is closed.
type trackedConn struct {
	net.Conn
	h    *Health
	once sync.Once
}

// Close implements net.Conn.
func (c *trackedConn) Close() error {
	c.once.Do(func() {
		c.h.cmu.Lock()
		delete(c.h.conns, c)
		c.h.cmu.Unlock()
	})
	return c.Conn.Close()
}

// cut ends every read and write in flight on the client's connections
// (their deadline passes now): the calls hung on a Redis that stopped
// answering fail at once, as the later ones do. The client sets its own
// deadline before each use, so an idle connection works again.
func (h *Health) cut() {
	h.cmu.Lock()
	defer h.cmu.Unlock()
	now := time.Now()
	for c := range h.conns {
		c.SetDeadline(now)
	}
}

// ProcessHook implements goredis.Hook: while Redis is down a command
// fails at once with ErrDown.
func (h *Health) ProcessHook(next goredis.ProcessHook) goredis.ProcessHook {
	return func(ctx context.Context, cmd goredis.Cmder) error {
		if !h.allowed(ctx) {
			h.m.refused.Inc()
			cmd.SetErr(ErrDown)
			return ErrDown
		}
		err := next(ctx, cmd)
		h.suspect(err)
		return err
	}
}

// ProcessPipelineHook implements goredis.Hook: while Redis is down a
// pipeline (or transaction) fails at once with ErrDown.
func (h *Health) ProcessPipelineHook(next goredis.ProcessPipelineHook) goredis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []goredis.Cmder) error {
		if !h.allowed(ctx) {
			h.m.refused.Inc()
			for _, c := range cmds {
				c.SetErr(ErrDown)
			}
			return ErrDown
		}
		err := next(ctx, cmds)
		h.suspect(err)
		return err
	}
}

// loop is the probe's goroutine, started by NewHealth: a ping every
// Interval (or at once after a call timed out) until Close.
func (h *Health) loop() {
	defer close(h.done)
	t := time.NewTicker(h.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-h.stop:
			return
		case <-t.C:
		case <-h.kick:
		}
		ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
		err := h.probe.Ping(ctx).Err()
		cancel()
		switch {
		case err != nil:
			h.markDown(err)
		case h.state.Load() != healthUp:
			h.recoverUp()
		}
	}
}

// markDown opens the circuit (once per spell).
func (h *Health) markDown(err error) {
	if h.state.Swap(healthDown) != healthUp {
		return
	}
	h.mu.Lock()
	close(h.down)
	h.since = time.Now()
	h.mu.Unlock()
	h.m.up.Set(0)
	h.cut()
	h.log.Warn("redis is not answering: its calls fail at once until it does (reads from the store, routes to every node)",
		"timeout", h.cfg.Timeout, "err", err)
}

// recoverUp runs the recovery steps and closes the circuit if they all
// succeed; otherwise Redis stays down until the next good ping.
func (h *Health) recoverUp() {
	h.state.Store(healthRecovering)
	h.mu.Lock()
	steps := h.recover
	h.mu.Unlock()
	for _, step := range steps {
		ctx, cancel := context.WithTimeout(context.WithValue(context.Background(), recoveryKey{}, true), recoveryTime(h.cfg.Timeout))
		err := step(ctx)
		cancel()
		if err != nil {
			h.state.Store(healthDown)
			h.log.Warn("redis answers again, but its recovery failed: still down", "err", err)
			return
		}
	}
	h.mu.Lock()
	h.down = make(chan struct{})
	since := h.since
	h.mu.Unlock()
	h.state.Store(healthUp)
	h.m.up.Set(1)
	h.log.Info("redis answers again", "down", time.Since(since).Round(time.Millisecond))
}

// healthMetrics are the breaker's metrics.
type healthMetrics struct {
	up      prometheus.Gauge
	refused prometheus.Counter
}

func newHealthMetrics(reg prometheus.Registerer) healthMetrics {
	m := healthMetrics{
		up: prometheus.NewGauge(prometheus.GaugeOpts{Name: "parley_redis_up",
			Help: "1 while Redis answers the health probe, 0 while its calls fail at once."}),
		refused: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_redis_refused_total",
			Help: "Redis calls failed at once while Redis was marked down."}),
	}
	if reg != nil {
		reg.MustRegister(m.up, m.refused)
	}
	return m
}
