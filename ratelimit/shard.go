package ratelimit

import "sync"

// shard is one independently locked part of a Limiter or a Backoff: the
// entries of the keys whose seeded hash falls in it.
type shard[V any] struct {
	mu      sync.Mutex   // guards the following fields
	entries map[uint64]V // by the key's seeded hash
	peak    int          // the most entries the map has held since it was made
	swept   int64        // when sweepLocked last ran, ns since the owner's origin
}

// putLocked stores v for h and notes the map's peak. s.mu must be held.
func (s *shard[V]) putLocked(h uint64, v V) {
	s.entries[h] = v
	s.peak = max(s.peak, len(s.entries))
}

// sweepLocked forgets the entries done says are done at now. A Go map
// keeps its largest size after deletes, so once it holds under a quarter
// of its peak the rest is copied to a new one, and memory follows the keys
// that are active now rather than the busiest moment ever. s.mu must be
// held.
func (s *shard[V]) sweepLocked(now int64, done func(V) bool) {
	for h, v := range s.entries {
		if done(v) {
			delete(s.entries, h)
		}
	}
	if n := len(s.entries); n < s.peak/4 {
		m := make(map[uint64]V, n)
		for h, v := range s.entries {
			m[h] = v
		}
		s.entries, s.peak = m, n
	}
	s.swept = now
}

// count returns the entries of every shard, locking each in turn, one at a
// time.
func count[V any](shards []shard[V]) int {
	n := 0
	for i := range shards {
		s := &shards[i]
		s.mu.Lock()
		n += len(s.entries)
		s.mu.Unlock()
	}
	return n
}
