package retention

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"parley"
)

// Store is what the sweeper calls: the expired messages, and their
// deletion.
type Store interface {
	parley.Expiry
	DeleteMessage(ctx context.Context, d parley.Deletion) (parley.Message, bool, error)
}

// Defaults of Config.
const (
	DefaultBatch    = 500
	DefaultInFlight = 1
	DefaultInterval = time.Minute
)

// Config sets up a Sweeper. Zero fields take the defaults named.
type Config struct {
	Store Store
	// Retention is how long the messages of a room without a retention
	// of its own are kept (parley.RetentionOf); 0 keeps them forever, and
	// the sweeper then deletes only in the rooms with their own.
	Retention time.Duration
	// Batch is how many expired messages one read returns
	// (DefaultBatch); the sweeper yields between batches.
	Batch int
	// InFlight is how many deletions of a batch are asked at once
	// (DefaultInFlight). Each is a write of its own, which the store's
	// group commit batches with the others and with the sends of the
	// moment: a send waits behind at most one transaction of at most
	// InFlight deletions. More sweep faster and cost the sends beside
	// them more (BENCHMARKS.md, "Retention sweep": 4 at once swept 1.8x
	// faster and made the sends' p99 4.6x theirs without a sweep, 1 at
	// once 1.3x).
	InFlight int
	// Interval is the time between passes (DefaultInterval); ignored
	// when Tick is set.
	Interval time.Duration
	// Now is the clock (time.Now).
	Now func() time.Time
	// Tick, when set, starts a pass at each receive instead of a ticker
	// of Interval (tests drive the sweeper with it).
	Tick <-chan time.Time
	// Lock, when set, is taken around each pass: a pass is skipped when
	// ok is false (another node sweeps). release ends it.
	Lock func(ctx context.Context) (release func(), ok bool, err error)
	// OnPass, when set, is called after each pass with its outcome.
	OnPass func(deleted int, err error)
	// Registerer, when set, registers the sweeper's metrics:
	// parley_retention_deleted_total and parley_retention_pass_errors_total.
	Registerer prometheus.Registerer
}

// Sweeper runs passes until Close. It owns one goroutine.
type Sweeper struct {
	cfg    Config
	cancel context.CancelFunc
	done   chan struct{}
	total  atomic.Int64 // messages deleted since Start

	deleted, failed prometheus.Counter
}

// Start starts a sweeper; Close stops it.
func Start(cfg Config) (*Sweeper, error) {
	if cfg.Retention < 0 {
		return nil, fmt.Errorf("retention: the retention must be 0 or more, not %v", cfg.Retention)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.InFlight <= 0 {
		cfg.InFlight = DefaultInFlight
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sweeper{cfg: cfg, cancel: cancel, done: make(chan struct{}),
		deleted: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_retention_deleted_total",
			Help: "Messages the retention sweeper made tombstones."}),
		failed: prometheus.NewCounter(prometheus.CounterOpts{Name: "parley_retention_pass_errors_total",
			Help: "Retention passes that ended with an error (the next pass starts over)."}),
	}
	if cfg.Registerer != nil {
		if err := cfg.Registerer.Register(s.deleted); err != nil {
			cancel()
			return nil, fmt.Errorf("retention: metrics: %w", err)
		}
		if err := cfg.Registerer.Register(s.failed); err != nil {
			cancel()
			return nil, fmt.Errorf("retention: metrics: %w", err)
		}
	}
	tick := cfg.Tick
	var ticker *time.Ticker
	if tick == nil {
		ticker = time.NewTicker(cfg.Interval)
		tick = ticker.C
	}
	go func() {
		defer close(s.done)
		if ticker != nil {
			defer ticker.Stop()
		}
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick:
			}
			n, err := s.pass(ctx)
			if cfg.OnPass != nil && ctx.Err() == nil {
				cfg.OnPass(n, err)
			}
		}
	}()
	return s, nil
}

// Close stops the sweeper, ending a pass under way between two
// deletions, and waits for its goroutine.
func (s *Sweeper) Close() error {
	s.cancel()
	<-s.done
	return nil
}

// Deleted returns how many messages the sweeper has deleted.
func (s *Sweeper) Deleted() int { return int(s.total.Load()) }

func (s *Sweeper) pass(ctx context.Context) (int, error) {
	if s.cfg.Lock != nil {
		release, ok, err := s.cfg.Lock(ctx)
		if err != nil || !ok {
			return 0, err
		}
		defer release()
	}
	n, err := Sweep(ctx, s.cfg.Store, s.cfg.Now(), s.cfg.Retention, s.cfg.Batch, s.cfg.InFlight)
	s.total.Add(int64(n))
	s.deleted.Add(float64(n))
	if err != nil && ctx.Err() == nil {
		s.failed.Inc()
	}
	return n, err
}

// Sweep deletes every message of st older at now than its room's
// retention (def for the rooms without their own) that is not deleted
// yet, reading batch of them at a time and asking inflight deletions at
// once, and returns how many it deleted. A message deleted meanwhile by
// someone else is not counted.
func Sweep(ctx context.Context, st Store, now time.Time, def time.Duration, batch, inflight int) (int, error) {
	var after parley.MessageRef
	n := 0
	for {
		refs, err := st.Expired(ctx, now, def, after, batch)
		if err != nil {
			return n, fmt.Errorf("retention: expired: %w", err)
		}
		d, err := deleteAll(ctx, st, refs, inflight)
		n += d
		if err != nil {
			return n, err
		}
		if len(refs) < batch {
			return n, expireEvents(ctx, st, now, def, batch)
		}
		after = refs[len(refs)-1]
		runtime.Gosched()
	}
}

// expireEvents deletes the member and room events kept for the webhooks
// by the same age rule, batch at a time, when st keeps them.
func expireEvents(ctx context.Context, st Store, now time.Time, def time.Duration, batch int) error {
	ee, ok := st.(parley.EventExpiry)
	if !ok {
		return nil
	}
	for {
		k, err := ee.ExpireRoomEvents(ctx, now, def, batch)
		if err != nil {
			return fmt.Errorf("retention: room events: %w", err)
		}
		if k < batch {
			return nil
		}
		runtime.Gosched()
	}
}

// deleteAll deletes refs, inflight at a time, and returns how many it
// deleted and the first error.
func deleteAll(ctx context.Context, st Store, refs []parley.MessageRef, inflight int) (int, error) {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex // guards the following fields
		n     int
		first error
	)
	sem := make(chan struct{}, max(1, inflight))
	for _, r := range refs {
		if err := ctx.Err(); err != nil {
			mu.Lock()
			first = cmp.Or(first, err)
			mu.Unlock()
			break
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			_, deleted, err := st.DeleteMessage(ctx, parley.Deletion{RoomID: r.RoomID, Seq: r.Seq, Moderator: true})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case parley.ErrorCode(err) == parley.CodeNotFound:
				// The room or message is gone: nothing to delete.
			case err != nil:
				first = cmp.Or(first, fmt.Errorf("retention: delete message %d of room %s: %w", r.Seq, r.RoomID, err))
			case deleted:
				n++
			}
		}()
	}
	wg.Wait()
	return n, first
}
