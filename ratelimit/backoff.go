package ratelimit

import (
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
// failure. Failures are forgiven one per Decay.
//
// An attempt is counted as a failure when it begins (Attempt), before its
// outcome is known, so that concurrent attempts cannot slip past the
// limit together; a success then takes its count back (Undo) or clears
// the key (Reset).
//
// Memory and concurrency are those of Limiter: 256 shards of a map from
// the key's seeded 64-bit hash to a 24-byte entry, one lock per call, and
// an entry forgotten, by a sweep of its shard, once its wait is over and
// all its failures are forgiven (count × Decay after the last). Memory
// follows the keys that failed lately, not every key ever seen.
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

// failure is one key's record: count failures, the last at time at.
type failure struct {
	count int64
	at    int64 // ns since Backoff.start
	prev  int64 // at before the last Attempt, for Undo
}

// NewBackoff returns a Backoff.
func NewBackoff(cfg BackoffConfig) *Backoff {
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

// Attempt begins an attempt of key. If key is waiting it counts nothing
// and returns false with the time left to wait. Otherwise it counts the
// attempt as a failure and returns true: call Undo or Reset if it
// succeeds.
func (b *Backoff) Attempt(key string) (ok bool, retryAfter time.Duration) {
	now := int64(b.now().Sub(b.start))
	s, h := b.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if now-s.swept >= b.decay {
		b.sweepLocked(s, now)
	}
	f, seen := s.entries[h]
	prev := now
	if seen {
		if left := f.at + b.wait(f.count) - now; left > 0 {
			return false, time.Duration(left)
		}
		f.count, prev = b.forgiven(f, now), f.at
	}
	s.putLocked(h, failure{count: f.count + 1, at: now, prev: prev})
	return true, 0
}

// Undo takes back the failure that a successful Attempt counted: the
// key's earlier failures stay, and its wait runs from the last of them
// again.
func (b *Backoff) Undo(key string) {
	s, h := b.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	if f, seen := s.entries[h]; seen {
		if f.count <= 1 {
			delete(s.entries, h)
		} else {
			f.count, f.at = f.count-1, f.prev
			s.entries[h] = f
		}
	}
}

// Reset forgets every failure of key.
func (b *Backoff) Reset(key string) {
	s, h := b.shard(key)
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, h)
}

func (b *Backoff) shard(key string) (*shard[failure], uint64) {
	h := maphash.String(b.seed, key)
	return &b.shards[h%shards], h
}

// sweepLocked forgets the entries of s whose failures are all forgiven
// and whose wait is over: a key that comes back starts from nothing
// either way. s.mu must be held.
func (b *Backoff) sweepLocked(s *shard[failure], now int64) {
	s.sweepLocked(now, func(f failure) bool { return b.forgiven(f, now) == 0 && now >= f.at+b.wait(f.count) })
}

// Len returns the number of keys with failures on record, for metrics
// and tests. It locks each shard in turn, one at a time.
func (b *Backoff) Len() int { return count(b.shards[:]) }
