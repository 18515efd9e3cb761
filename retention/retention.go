package retention

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

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
	DefaultInterval = time.Minute
)

// Config sets up a Sweeper. Zero fields take the defaults named.
type Config struct {
	Store     Store
	Retention time.Duration // how long messages are kept; must be > 0
	// Batch is how many expired messages one read returns
	// (DefaultBatch). Each is deleted by its own write, so a send waits
	// behind at most one deletion (or, with the SQLite store's group
	// commit, shares a transaction with a few), and the sweeper yields
	// between batches.
	Batch int
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
}

// Sweeper runs passes until Close. It owns one goroutine.
type Sweeper struct {
	cfg    Config
	cancel context.CancelFunc
	done   chan struct{}
	mu     sync.Mutex // guards the following field
	total  int        // messages deleted since Start
}

// Start starts a sweeper; Close stops it.
func Start(cfg Config) (*Sweeper, error) {
	if cfg.Retention <= 0 {
		return nil, fmt.Errorf("retention: the retention must be positive, not %v", cfg.Retention)
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Interval <= 0 {
		cfg.Interval = DefaultInterval
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Sweeper{cfg: cfg, cancel: cancel, done: make(chan struct{})}
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
func (s *Sweeper) Deleted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total
}

func (s *Sweeper) pass(ctx context.Context) (int, error) {
	if s.cfg.Lock != nil {
		release, ok, err := s.cfg.Lock(ctx)
		if err != nil || !ok {
			return 0, err
		}
		defer release()
	}
	n, err := Sweep(ctx, s.cfg.Store, s.cfg.Now().Add(-s.cfg.Retention), s.cfg.Batch)
	s.mu.Lock()
	s.total += n
	s.mu.Unlock()
	return n, err
}

// Sweep deletes every message of st sent before cutoff that is not
// deleted yet, reading batch of them at a time, and returns how many it
// deleted. A message deleted meanwhile by someone else is not counted.
func Sweep(ctx context.Context, st Store, cutoff time.Time, batch int) (int, error) {
	var after parley.MessageRef
	n := 0
	for {
		refs, err := st.Expired(ctx, cutoff, after, batch)
		if err != nil {
			return n, fmt.Errorf("retention: expired: %w", err)
		}
		for _, r := range refs {
			if err := ctx.Err(); err != nil {
				return n, err
			}
			_, deleted, err := st.DeleteMessage(ctx, parley.Deletion{RoomID: r.RoomID, Seq: r.Seq, Moderator: true})
			switch {
			case parley.ErrorCode(err) == parley.CodeNotFound:
				// The room or message is gone: nothing to delete.
			case err != nil:
				return n, fmt.Errorf("retention: delete message %d of room %s: %w", r.Seq, r.RoomID, err)
			case deleted:
				n++
			}
		}
		if len(refs) < batch {
			return n, nil
		}
		after = refs[len(refs)-1]
		runtime.Gosched()
	}
}
