package cache

import "sync/atomic"

// A clockBit records that a key was read since the last eviction sweep. Reads
// set it under the read lock, so it is atomic; it is loaded first so that a
// hot key does not bounce its cache line between cores on every read.
type clockBit struct{ v atomic.Bool }

// Store sets or clears the bit.
func (c *clockBit) Store(b bool) {
	if c.v.Load() != b {
		c.v.Store(b)
	}
}

// evictable is a cached key's state as the eviction sweep sees it.
type evictable interface {
	busy() bool          // a load is in flight: not evictable
	drop()               // called once it is evicted
	clockBit() *clockBit // read since the last sweep
}

// evictLocked removes entries from m until it holds at most max. It is a
// clock sweep over the map's (random) iteration order: an entry read since
// the last sweep loses its bit and is spared once; one with a load in flight
// is always spared. Two passes are enough unless every entry is busy, in
// which case the map stays over its cap until the loads finish.
func evictLocked[S evictable](m map[string]S, max int) {
	for pass := 0; pass < 2 && len(m) > max; pass++ {
		for k, v := range m {
			if len(m) <= max {
				return
			}
			if v.busy() {
				continue
			}
			if b := v.clockBit(); b.v.Load() {
				b.Store(false)
				continue
			}
			delete(m, k)
			v.drop()
		}
	}
}
