package webhook

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/url"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"parley"
)

// Store is what the deliveries need of the durable store: the webhooks,
// their leases and positions (sqlite and postgres keep them), and the
// rooms' messages by seq and by change, and their member and room events.
type Store interface {
	Webhooks(ctx context.Context) ([]parley.Webhook, error)
	AcquireWebhookLease(ctx context.Context, id, owner string, ttl time.Duration) (parley.HookLease, bool, error)
	ReleaseWebhookLease(ctx context.Context, l parley.HookLease) error
	PauseWebhook(ctx context.Context, l parley.HookLease, reason string) error
	AdvanceWebhook(ctx context.Context, l parley.HookLease, p parley.HookPosition) error
	HookPositions(ctx context.Context, h parley.Webhook) ([]parley.HookPosition, error)
	Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error)
	Changed(ctx context.Context, roomID string, after int64, limit int) ([]parley.Message, error)
	RoomEvents(ctx context.Context, roomID string, after int64, limit int) ([]parley.RoomEvent, error)
}

// Defaults of Config.
const (
	DefaultPoll        = time.Second
	DefaultLeaseTTL    = 15 * time.Second
	DefaultTimeout     = 10 * time.Second
	DefaultConcurrency = 4
	DefaultMaxFailures = 35
	DefaultMinBackoff  = time.Second
	DefaultMaxBackoff  = 5 * time.Minute
)

// Config configures a Manager; zero fields take the defaults above.
type Config struct {
	Store Store
	// Node names this node in the leases (the cluster's node id).
	Node string
	// Filter decides which addresses the webhooks may reach (nil: the
	// default, every internal address refused).
	Filter *Filter
	// Poll is how often each webhook held by this node looks for new
	// events, and how often the node looks for webhooks to take.
	Poll time.Duration
	// LeaseTTL is how long a lease lasts unless renewed (every LeaseTTL/3
	// at most): a dead node's webhooks move to another node within
	// LeaseTTL plus Poll.
	LeaseTTL time.Duration
	// Timeout bounds each delivery: connecting, sending and the answer.
	Timeout time.Duration
	// Concurrency is how many rooms of one webhook are delivered at once
	// (each room's events one at a time, in order).
	Concurrency int
	// MaxFailures consecutive failed attempts of a webhook (over all its
	// rooms) pause it until `parley webhook resume`.
	MaxFailures int
	// MinBackoff and MaxBackoff bound the wait before a failed delivery
	// is tried again: MinBackoff doubled at each failure up to MaxBackoff,
	// with half of it random (jitter).
	MinBackoff, MaxBackoff time.Duration
	// Now is the clock of the signatures' timestamps and of the leases'
	// age (time.Now).
	Now func() time.Time
	// Registerer, when set, registers the metrics: parley_webhook_deliveries_total{result},
	// parley_webhook_pauses_total, parley_webhooks_paused, parley_webhook_leases,
	// parley_webhook_lag_events{webhook}.
	Registerer prometheus.Registerer
	// Logger (slog.Default()).
	Logger *slog.Logger
}

func (c *Config) defaults() {
	if c.Filter == nil {
		c.Filter = &Filter{hosts: map[string]bool{}}
	}
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&c.Poll, DefaultPoll)
	set(&c.LeaseTTL, DefaultLeaseTTL)
	set(&c.Timeout, DefaultTimeout)
	set(&c.MinBackoff, DefaultMinBackoff)
	set(&c.MaxBackoff, DefaultMaxBackoff)
	if c.Concurrency <= 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.MaxFailures <= 0 {
		c.MaxFailures = DefaultMaxFailures
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
}

// Manager delivers the webhooks whose lease this node holds. It owns one
// goroutine, which takes and renews the leases, and one per webhook held.
type Manager struct {
	cfg    Config
	cancel context.CancelFunc
	done   chan struct{}

	deliveries *prometheus.CounterVec
	pauses     prometheus.Counter
	paused     prometheus.Gauge
	leases     prometheus.Gauge
	lag        *prometheus.GaugeVec

	// workers is owned by the manager's goroutine.
	workers map[string]*worker
}

// Start starts a Manager; Close stops it.
func Start(cfg Config) (*Manager, error) {
	if cfg.Store == nil || cfg.Node == "" {
		return nil, errors.New("webhook: a store and a node id are needed")
	}
	cfg.defaults()
	m := &Manager{cfg: cfg, done: make(chan struct{}), workers: map[string]*worker{},
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "parley_webhook_deliveries_total",
			Help: "Webhook delivery attempts by outcome: ok, failed, timeout, redirect (never followed), refused (an internal address)."}, []string{"result"}),
		pauses: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_webhook_pauses_total",
			Help: "Webhooks this node paused after too many failed deliveries."}),
		paused: prometheus.NewGauge(prometheus.GaugeOpts{Name: "parley_webhooks_paused",
			Help: "Webhooks paused (waiting for parley webhook resume), as this node last read them."}),
		leases: prometheus.NewGauge(prometheus.GaugeOpts{Name: "parley_webhook_leases",
			Help: "Webhooks this node holds the lease of, and delivers."}),
		lag: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "parley_webhook_lag_events",
			Help: "Events not yet delivered by a webhook this node delivers, over all rooms, at its last look."}, []string{"webhook"}),
	}
	for _, r := range []string{resultOK, resultFailed, resultTimeout, resultRedirect, resultRefused} {
		m.deliveries.WithLabelValues(r)
	}
	if cfg.Registerer != nil {
		for _, c := range []prometheus.Collector{m.deliveries, m.pauses, m.paused, m.leases, m.lag} {
			if err := cfg.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("webhook: metrics: %w", err)
			}
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	m.cancel = cancel
	go m.run(ctx)
	return m, nil
}

// Close stops every delivery (one in flight is cut: it is sent again
// later, at least once), releases this node's leases so that another
// node takes them at once, and waits for the goroutines.
func (m *Manager) Close() error {
	m.cancel()
	<-m.done
	return nil
}

func (m *Manager) run(ctx context.Context) {
	defer close(m.done)
	every := min(m.cfg.Poll, m.cfg.LeaseTTL/3)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		m.round(ctx)
		select {
		case <-ctx.Done():
			rctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			for id := range m.workers {
				m.stop(rctx, id, true)
			}
			cancel()
			return
		case <-t.C:
		}
	}
}

// round takes or renews the lease of every webhook that is not paused,
// starts a worker for each one taken, and stops the workers of the
// webhooks lost, paused or removed.
func (m *Manager) round(ctx context.Context) {
	hooks, err := m.cfg.Store.Webhooks(ctx)
	if err != nil {
		if ctx.Err() == nil {
			m.cfg.Logger.Warn("webhooks: list", "err", err)
		}
		return // the workers stop by themselves once their leases are too old
	}
	seen := map[string]bool{}
	paused := 0
	for _, h := range hooks {
		seen[h.ID] = true
		if h.PausedAt != nil {
			paused++
			m.stop(ctx, h.ID, false)
			continue
		}
		asked := m.cfg.Now()
		l, ok, err := m.cfg.Store.AcquireWebhookLease(ctx, h.ID, m.cfg.Node, m.cfg.LeaseTTL)
		if err != nil {
			if ctx.Err() == nil {
				m.cfg.Logger.Warn("webhook lease", "webhook", h.Name, "err", err)
			}
			continue
		}
		w := m.workers[h.ID]
		switch {
		case !ok:
			m.stop(ctx, h.ID, false)
		case w != nil && w.lease.Token == l.Token && !w.ended():
			w.renewed.Store(asked.UnixNano())
		default:
			m.stop(ctx, h.ID, false)
			if w == nil || w.lease.Token != l.Token {
				m.cfg.Logger.Info("webhook lease taken", "webhook", h.Name, "node", m.cfg.Node, "token", l.Token)
			}
			m.start(ctx, h, l, asked)
		}
	}
	for id := range m.workers {
		if !seen[id] {
			m.stop(ctx, id, false)
		}
	}
	m.paused.Set(float64(paused))
	m.leases.Set(float64(len(m.workers)))
}

func (m *Manager) start(ctx context.Context, h parley.Webhook, l parley.HookLease, renewed time.Time) {
	wctx, cancel := context.WithCancel(ctx)
	host := ""
	if u, err := url.Parse(h.URL); err == nil {
		host = u.Hostname()
	}
	w := &worker{m: m, h: h, lease: l, cancel: cancel, done: make(chan struct{}),
		client: newClient(m.cfg.Filter, host, m.cfg.Timeout)}
	w.renewed.Store(renewed.UnixNano())
	m.workers[h.ID] = w
	go w.run(wctx)
}

// stop ends the worker of webhook id, if any; with release it also ends
// its lease, so that another node takes it at once.
func (m *Manager) stop(ctx context.Context, id string, release bool) {
	w := m.workers[id]
	if w == nil {
		return
	}
	delete(m.workers, id)
	w.cancel()
	<-w.done
	w.client.CloseIdleConnections()
	m.lag.DeleteLabelValues(w.h.Name)
	if release {
		if err := m.cfg.Store.ReleaseWebhookLease(ctx, w.lease); err != nil {
			m.cfg.Logger.Warn("webhook lease release", "webhook", w.h.Name, "err", err)
		}
	}
}

// backoff is the wait before attempt n+1 after n failures: MinBackoff
// doubled n-1 times, at most MaxBackoff, its second half random.
func (m *Manager) backoff(n int64) time.Duration {
	d := m.cfg.MinBackoff
	for i := int64(1); i < n && d < m.cfg.MaxBackoff; i++ {
		d *= 2
	}
	d = min(d, m.cfg.MaxBackoff)
	return d/2 + rand.N(d/2+1)
}

// wait waits d or until ctx ends; it reports whether d passed.
func wait(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// errStop ends a worker: the webhook was paused or its lease lost.
var errStop = errors.New("webhook: worker stopped")
