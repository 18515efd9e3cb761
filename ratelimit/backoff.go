package ratelimit

import (
	"context"
	"fmt"
	"hash/maphash"
	"time"
)

// BackoffConfig configures a Backoff. Zero fields take the documented
// defaults.
type BackoffConfig struct {
	// Free is the number of failures a key may have before it must wait.
	// Default 5.
	Free int
	// Base is the wait after the Free-th failure; each failure after it
	// doubles the wait. Default 1 s.
	Base time.Duration
	// Max caps the wait. Default 15 minutes.
	Max time.Duration
	// Decay forgives one failure for each Decay that passes without a
	// new one, so that a key left alone comes back to Free failures
	// allowed. Default Max.
	Decay time.Duration
	// Now is the clock. Default time.Now; tests pass a fake one.
	Now func() time.Time
}

// Backoff slows down repeated failures of a key (a name, an address) with
// an exponential wait: Free failures are allowed at once, then each
// attempt must wait Base × 2^(failures−Free), at most Max, after the last
// failure. Failures are forgiven one per Decay. Only failures count: an
// attempt that succeeds, however many run at once, never makes anybody
// wait.
//
// So that attempts running at once cannot slip past the limit together,
// each one holds a reservation while its outcome is unknown (Begin, then
// its end): an attempt may start only while the key's failures on record
// plus its attempts in flight are fewer than Free, or, once those
// failures have made it wait, when its wait is over and nothing is in
// flight for the key (one backed-off try at a time). Otherwise Begin waits
// for an attempt in flight to end and decides again: N attempts at once
// run no more than Free of them (then one at a time past Free), and the
// failures among them are counted before any later one is let through.
//
// Memory and concurrency are those of Limiter: 256 shards of a map from
// the key's seeded 64-bit hash to a 32-byte entry, one lock per call, and
// an entry forgotten, by a sweep of its shard, once nothing is in flight
// for it, its wait is over and all its failures are forgiven (count ×
// Decay after the last), or at once when its last attempt in flight ends
// with no failure on record. Memory follows the keys that failed lately
// and those with attempts in flight, not every key ever seen. Begin waits
// with no lock held, on a channel of its key's entry that the next end
// (or Reset) closes.
type Backoff struct {
	free  int
	base  int64 // ns
	max   int64 // ns
	decay int64 // ns
	now   func() time.Time
	start time.Time // the origin of every stored time
	seed  maphash.Seed

	shards [shards]shard[failure]
}

// failure is one key's record: count failures, the last at time at, and
// inflight attempts begun and not ended.
type failure struct {
	count    int64
	at       int64 // ns since Backoff.start
	inflight int64
	settled  chan struct{} // closed when an attempt ends or the key is reset; nil while nobody waits
}

// WithDefaults returns cfg with its zero fields set to their documented
// defaults (and Max raised to Base if below it): the settings a Backoff
// runs with, and those a limit kept elsewhere (redis.LoginLimit) follows.
func (cfg BackoffConfig) WithDefaults() BackoffConfig {
	if cfg.Free <= 0 {
		cfg.Free = 5
	}
	if cfg.Base <= 0 {
		cfg.Base = time.Second
	}
	if cfg.Max <= 0 {
		cfg.Max = 15 * time.Minute
	}
	cfg.Max = max(cfg.Max, cfg.Base)
	if cfg.Decay <= 0 {
		cfg.Decay = cfg.Max
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return cfg
}

// NewBackoff returns a Backoff.
func NewBackoff(cfg BackoffConfig) *Backoff {
	cfg = cfg.WithDefaults()
	b := &Backoff{
		free: cfg.Free, base: int64(cfg.Base), max: int64(cfg.Max), decay: int64(cfg.Decay),
		now: cfg.Now, start: cfg.Now(), seed: maphash.MakeSeed(),
	}
	for i := range b.shards {
		b.shards[i].entries = map[uint64]failure{}
	}
	return b
}

// Free returns the number of failures allowed before a wait.
func (b *Backoff) Free() int { return b.free }

// wait returns the wait after count failures.
func (b *Backoff) wait(count int64) int64 {
	n := count - int64(b.free)
	switch {
	case n < 0:
		return 0
	case n >= 62 || b.base<<n <= 0 || b.base<<n > b.max: // overflow or over the cap
		return b.max
	}
	return b.base << n
}

// forgiven returns f's count at now, less one failure per decay since
// the last.
func (b *Backoff) forgiven(f failure, now int64) int64 {
	return max(0, f.count-max(0, now-f.at)/b.decay)
}

// Begin starts an attempt of key. If key is waiting for its failures it
// reserves nothing and returns a nil end with the time left to wait.
// Otherwise it reserves the attempt and returns end, which the caller
// must call exactly once with its outcome: a failure is counted, a
// success counts nothing (Reset forgets the earlier failures as well).
// While the attempts in flight leave no room for this one, Begin waits
// for one of them to end and decides again, until ctx is done: then it
// returns ctx's error, reserving nothing.
func (b *Backoff) Begin(ctx context.Context, key string) (end func(failed bool), retryAfter time.Duration, err error) {
	s, h := b.shard(key)
	for {
		ok, wait, settled := b.tryBeginLocking(s, h)
		switch {
		case ok:
			return func(failed bool) { b.end(s, h, failed) }, 0, nil
		case wait > 0:
			return nil, wait, nil
		}
		select {
		case <-settled:
		case <-ctx.Done():
			return nil, 0, fmt.Errorf("wait for the attempts in flight: %w", ctx.Err())
		}
	}
}

// tryBeginLocking reserves an attempt of the key hashed h if it may start
// now (ok), or returns the wait left for its failures, or else a channel
// closed when an attempt in flight ends. It takes s.mu.
func (b *Backoff) tryBeginLocking(s *shard[failure], h uint64) (ok bool, retryAfter time.Duration, settled <-chan struct{}) {
	now := int64(b.now().Sub(b.start))
	s.mu.Lock()
	defer s.mu.Unlock()
	if now-s.swept >= b.decay {
		b.sweepLocked(s, now)
	}
	f := s.entries[h]
	if left := f.at + b.wait(f.count) - now; f.count > 0 && left > 0 {
		return false, time.Duration(left), nil
	}
	n := b.forgiven(f, now)
	if n+f.inflight < int64(b.free) || f.inflight == 0 { // room left, or the one try after a wait
		f.inflight++
		s.putLocked(h, f)
		return true, 0, nil
	}
	if f.settled == nil {
		f.settled = make(chan struct{})
		s.entries[h] = f
	}
	return false, 0, f.settled
}

// end ends an attempt reserved by Begin.
func (b *Backoff) end(s *shard[failure], h uint64, failed bool) {
	now := int64(b.now().Sub(b.start))
	s.mu.Lock()
	defer s.mu.Unlock()
	f := s.entries[h]
	f.inflight--
	if failed {
		f.count, f.at = b.forgiven(f, now)+1, now
	}
	b.storeLocked(s, h, f)
}

// Reset forgets every failure of key. Its attempts in flight stay
// reserved until they end.
func (b *Backoff) Reset(key string) {
	s, h := b.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, seen := s.entries[h]; seen {
		f.count, f.at = 0, 0
		b.storeLocked(s, h, f)
	}
}

// storeLocked stores f, changed by an end or a reset, for h: it wakes the
// Begin calls waiting for the key, and forgets the key once nothing is in
// flight and no failure is on record. s.mu must be held.
func (b *Backoff) storeLocked(s *shard[failure], h uint64, f failure) {
	if f.settled != nil {
		close(f.settled)
		f.settled = nil
	}
	if f.inflight <= 0 && f.count == 0 {
		delete(s.entries, h)
		return
	}
	s.entries[h] = f
}

func (b *Backoff) shard(key string) (*shard[failure], uint64) {
	h := maphash.String(b.seed, key)
	return &b.shards[h%shards], h
}

// sweepLocked forgets the entries of s whose failures are all forgiven
// and whose wait is over: a key that comes back starts from nothing
// either way. s.mu must be held.
func (b *Backoff) sweepLocked(s *shard[failure], now int64) {
	s.sweepLocked(now, func(f failure) bool {
		return f.inflight == 0 && b.forgiven(f, now) == 0 && now >= f.at+b.wait(f.count)
	})
}

// Len returns the number of keys with failures on record or attempts in
// flight, for metrics and tests. It locks each shard in turn, one at a time.
func (b *Backoff) Len() int { return count(b.shards[:]) }
