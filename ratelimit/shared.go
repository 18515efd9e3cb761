package ratelimit

import (
	"context"
	"hash/maphash"
	"log/slog"
	"math"
	"sync/atomic"
	"time"
)

// Source keeps the shared token buckets of a Shared limiter, one per key,
// for every node of a cluster (redis.Buckets keeps them in Redis).
type Source interface {
	// Take takes up to n tokens from key's shared bucket, which holds at
	// most burst tokens and refills at rate a second, and returns how
	// many it took (0 to n, as many as the bucket held, in whole tokens).
	// When it took none, wait is how long until a token is there. It
	// fails when the bucket cannot be reached, and must return once ctx
	// ends.
	Take(ctx context.Context, key string, n int, rate float64, burst int) (taken int, wait time.Duration, err error)
}

// SharedConfig configures a Shared limiter. Zero fields take the
// documented defaults.
type SharedConfig struct {
	// Rate and Burst are the budget of each key over the whole cluster,
	// as in Config (Rate required; Burst default twice Rate, rounded up).
	Rate  float64
	Burst int
	// Source keeps the shared buckets (required).
	Source Source
	// Lease is the number of tokens a node takes from the shared bucket
	// at once and then spends without asking again. Default Burst/10,
	// rounded up, at least 1. Leased tokens a node does not spend within
	// LeaseTTL are lost, so N nodes allow at most N × Lease calls more
	// than one bucket would in any window, and a user spread over N
	// nodes may find up to (N-1) × Lease of their tokens held, unspent,
	// on the nodes they are not using for up to LeaseTTL.
	Lease int
	// LeaseTTL is how long leased tokens stay spendable. Default 1 s.
	LeaseTTL time.Duration
	// Timeout bounds one Source.Take (a round trip, two for a Redis that
	// has not seen the script yet). Default 100 ms: a healthy Redis answers
	// in well under 1 ms, but a loaded machine must not pass for a hung
	// Redis, and after the first failure only one decision per Retry waits.
	Timeout time.Duration
	// Retry is how long, after a failed Take, every decision of this node
	// uses the per-node bucket (a Limiter of Rate and Burst) without
	// asking the Source; then one decision tries it again. Default 1 s.
	Retry time.Duration
	// Name names the limit in the log lines of an outage (one when it
	// starts, one when it ends).
	Name string
	// Logger logs outages. Default slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default time.Now.
	Now func() time.Time
}

// Shared allows each key Rate calls a second with bursts of Burst over a
// cluster: every node takes tokens in leases of Lease from a bucket the
// Source keeps for all of them, and spends them locally, so that most
// decisions cost no round trip and none costs more than one (a node asks
// once per Lease calls, and once per refusal's wait: a refused key is
// refused locally until a token can be there). When the Source fails or
// takes longer than Timeout, the node counts every key in a bucket of its
// own (per node, as Limiter does) for Retry, then tries again: the limit
// then holds per node, never closed for everyone.
//
// Concurrency: as Limiter, one shard lock per call, never held during a
// Take; concurrent callers of one key whose lease is spent wait for the
// one Take under way for it rather than start their own. After an
// outage's Retry one decision at a time tries the Source (probing); the
// others count per node meanwhile, so a Source that still hangs holds up
// one decision per Retry, for Timeout.
type Shared struct {
	rate, burst float64
	src         Source
	lease       int
	leaseTTL    int64 // ns
	timeout     time.Duration
	retry       int64 // ns
	name        string
	log         *slog.Logger
	now         func() time.Time
	base        time.Time
	seed        maphash.Seed
	local       *Limiter // while the Source is away

	downUntil atomic.Int64 // ns since base until which the Source is not asked; 0: up
	down      atomic.Bool  // an outage is under way (logged at its start and end)
	probing   atomic.Bool  // one decision is trying the Source after an outage's Retry

	shards [shards]shard[lease]
}

// lease is one key's leased tokens and its refusal.
type lease struct {
	tokens   int
	expires  int64         // ns since base; the tokens are lost after it
	refused  int64         // ns since base until which the key is refused without asking
	inFlight chan struct{} // closed when the Take under way for the key returns; nil: none
}

// NewShared returns a Shared limiter. It panics as New does on a bad Rate
// or a nil Source.
func NewShared(cfg SharedConfig) *Shared {
	if cfg.Source == nil {
		panic("ratelimit: Shared needs a Source")
	}
	local := New(Config{Rate: cfg.Rate, Burst: cfg.Burst, Now: cfg.Now})
	if cfg.Lease <= 0 {
		cfg.Lease = max(1, int(math.Ceil(local.burst/10)))
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 100 * time.Millisecond
	}
	if cfg.Retry <= 0 {
		cfg.Retry = time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	l := &Shared{
		rate: local.Rate(), burst: local.burst, src: cfg.Source, lease: cfg.Lease,
		leaseTTL: int64(cfg.LeaseTTL), timeout: cfg.Timeout, retry: int64(cfg.Retry),
		name: cfg.Name, log: cfg.Logger, now: local.now, base: local.base, seed: maphash.MakeSeed(),
		local: local,
	}
	for i := range l.shards {
		l.shards[i].entries = map[uint64]lease{}
	}
	return l
}

// Allow takes one token of key's budget, as Limiter.Allow does: false,
// with how long until a token is there, when the budget is spent.
func (l *Shared) Allow(key string) (ok bool, retryAfter time.Duration) {
	switch l.state() {
	case away:
		return l.local.Allow(key)
	case probe:
		defer l.probing.Store(false)
	}
	h := maphash.String(l.seed, key)
	s := &l.shards[h%shards]
	for range 3 { // the Take of another caller, then our own, then our own again
		now := l.nanos()
		s.mu.Lock()
		if now-s.swept >= l.leaseTTL {
			s.sweepLocked(now, func(e lease) bool { return e.inFlight == nil && now >= e.expires && now >= e.refused })
		}
		e := s.entries[h]
		switch {
		case e.tokens > 0 && now < e.expires:
			e.tokens--
			s.putLocked(h, e)
			s.mu.Unlock()
			return true, 0
		case now < e.refused:
			s.mu.Unlock()
			return false, time.Duration(e.refused - now)
		case e.inFlight != nil:
			wait := e.inFlight
			s.mu.Unlock()
			<-wait // a Take bounded by Timeout
			continue
		}
		done := make(chan struct{})
		e.inFlight = done
		s.putLocked(h, e)
		s.mu.Unlock()
		taken, wait, err := l.take(key)
		now = l.nanos()
		s.mu.Lock()
		e = s.entries[h]
		e.inFlight = nil
		if err == nil {
			if taken > 0 {
				e.tokens, e.expires = taken-1, now+l.leaseTTL
			} else {
				e.tokens, e.refused = 0, now+int64(wait)
			}
		}
		s.putLocked(h, e)
		s.mu.Unlock()
		close(done)
		switch {
		case err != nil:
			l.fail(now, err)
			return l.local.Allow(key)
		case taken > 0:
			return true, 0
		default:
			return false, wait
		}
	}
	return l.local.Allow(key) // the Source answered, but others spent the leases first
}

// take asks the Source for a lease, within Timeout.
func (l *Shared) take(key string) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(context.Background(), l.timeout)
	defer cancel()
	taken, wait, err := l.src.Take(ctx, key, l.lease, l.rate, int(l.burst))
	if err != nil {
		return 0, 0, err
	}
	l.downUntil.Store(0)
	if l.down.Swap(false) {
		l.log.Info("rate limit: the shared budget is back; counting over the cluster again", "limit", l.name)
	}
	return taken, wait, err
}

// The states of the Source for a decision.
const (
	up    = iota // ask it
	away         // an outage's Retry has not passed, or another decision is trying it: count per node
	probe        // the outage's Retry has passed: this decision tries it, the others count per node
)

// state returns the Source's state for a decision now; the caller of a
// probe clears probing when it returns.
func (l *Shared) state() int {
	until := l.downUntil.Load()
	switch {
	case until == 0:
		return up
	case l.nanos() < until || !l.probing.CompareAndSwap(false, true):
		return away
	}
	return probe
}

// fail starts or extends an outage at now.
func (l *Shared) fail(now int64, err error) {
	l.downUntil.Store(now + l.retry)
	if !l.down.Swap(true) {
		l.log.Warn("rate limit: the shared budget is unreachable; counting per node until it answers", "limit", l.name, "err", err)
	}
}

func (l *Shared) nanos() int64 { return max(1, int64(l.now().Sub(l.base))) }

// Rate returns the sustained calls a second each key is allowed.
func (l *Shared) Rate() float64 { return l.rate }

// Burst returns the most calls a quiet key is allowed at once.
func (l *Shared) Burst() int { return int(l.burst) }

// Len returns the keys this node holds a lease or a refusal for, and those
// of its per-node bucket, for metrics and tests.
func (l *Shared) Len() int { return count(l.shards[:]) + l.local.Len() }
