package ratelimit

import (
	"hash/maphash"
	"math"
	"time"
)

// shards is the number of independently locked parts of a Limiter: enough
// that concurrent callers rarely wait for one another and that a sweep
// holds one lock over a small part of the keys.
const shards = 256

// Config configures a Limiter. Zero fields take the documented defaults.
type Config struct {
	// Rate is the sustained number of calls a second each key is allowed
	// (required, > 0).
	Rate float64
	// Burst is the most calls a key that has been quiet is allowed at
	// once. Default: twice Rate, rounded up, at least 1.
	Burst int
	// Now is the clock. Default time.Now; tests pass a fake one.
	Now func() time.Time
}

// Limiter allows each key Rate calls a second with bursts of Burst. Its
// memory holds one small entry per key that was allowed a call within
// about two fill times (Burst/Rate), whatever the number of keys that were
// ever seen: about 55 bytes a key, so 55 MB for a million active keys.
type Limiter struct {
	rate  float64 // tokens a nanosecond
	burst float64
	fill  int64 // nanoseconds an empty bucket takes to fill up
	now   func() time.Time
	base  time.Time // the origin of every stored time
	seed  maphash.Seed

	shards [shards]shard[bucket]
}

// bucket is one key's token bucket: tokens left at time at.
type bucket struct {
	tokens float64
	at     int64 // ns since Limiter.base
}

// New returns a Limiter. It panics if cfg.Rate is not positive: a limiter
// that allows nothing is a wiring mistake, and no limit is no Limiter.
func New(cfg Config) *Limiter {
	if !(cfg.Rate > 0) || math.IsInf(cfg.Rate, 1) {
		panic("ratelimit: Rate must be positive and finite")
	}
	if cfg.Burst <= 0 {
		cfg.Burst = max(1, int(math.Ceil(2*cfg.Rate)))
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	l := &Limiter{
		rate:  cfg.Rate / 1e9,
		burst: float64(cfg.Burst),
		now:   cfg.Now,
		base:  cfg.Now(),
		seed:  maphash.MakeSeed(),
	}
	l.fill = int64(min(math.Ceil(l.burst/l.rate), math.MaxInt64/2)) // a tiny rate must not overflow
	for i := range l.shards {
		l.shards[i].entries = map[uint64]bucket{}
	}
	return l
}

// Allow takes one token from key's bucket. When the bucket is empty it
// takes nothing and returns false with how long until a token is there.
//
// Keys are stored as 64-bit hashes with a random seed: two keys share a
// bucket only if their hashes collide, which is about one chance in 10^7
// among a million active keys and cannot be aimed at from outside.
func (l *Limiter) Allow(key string) (ok bool, retryAfter time.Duration) {
	now := int64(l.now().Sub(l.base))
	h := maphash.String(l.seed, key)
	s := &l.shards[h%shards]
	s.mu.Lock()
	defer s.mu.Unlock()
	if now-s.swept >= l.fill {
		l.sweepLocked(s, now)
	}
	tokens := l.burst
	if b, seen := s.entries[h]; seen {
		tokens = l.tokens(b, now)
	}
	if tokens < 1 {
		// Nothing is stored: the bucket refills from its last take.
		return false, time.Duration(math.Ceil((1 - tokens) / l.rate))
	}
	s.putLocked(h, bucket{tokens: tokens - 1, at: now})
	return true, 0
}

// Rate returns the sustained calls a second each key is allowed.
func (l *Limiter) Rate() float64 { return l.rate * 1e9 }

// Burst returns the most calls a quiet key is allowed at once.
func (l *Limiter) Burst() int { return int(l.burst) }

// tokens returns what b holds at now.
func (l *Limiter) tokens(b bucket, now int64) float64 {
	elapsed := max(0, now-b.at) // a clock that steps back refills nothing
	return min(l.burst, b.tokens+float64(elapsed)*l.rate)
}

// sweepLocked forgets the buckets of s that are full again: a key that
// comes back starts with a full bucket either way. s.mu must be held.
func (l *Limiter) sweepLocked(s *shard[bucket], now int64) {
	s.sweepLocked(now, func(b bucket) bool { return now-b.at >= l.fill })
}

// Len returns the number of keys the Limiter holds an entry for, for
// metrics and tests. It locks each shard in turn, one at a time.
func (l *Limiter) Len() int { return count(l.shards[:]) }
