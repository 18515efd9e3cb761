// Package ratelimit keeps one token bucket per key (a user id) for
// millions of keys in bounded memory: a bucket left alone long enough to
// fill up again is indistinguishable from a new one, so it is forgotten.
// Backoff keeps, the same way, a count of failures per key and makes each
// attempt after a few wait exponentially longer; only failures count, and
// the attempts in flight hold reservations so that concurrent ones cannot
// slip past the count together (Backoff.Begin waits, with no lock held,
// for those in flight to end). Shared is a Limiter over a cluster: each
// node leases tokens from a bucket a Source keeps for all of them
// (shared.go).
//
// Concurrency: a Limiter is safe for concurrent use. Its keys are spread
// over a fixed array of shards by a seeded hash; each shard has its own
// mutex, which guards that shard's map and sweep time and nothing else. A
// call takes exactly one shard lock, never two, so there is no lock order.
// There are no goroutines: each shard sweeps itself, under its lock, on
// the first call that reaches it after a fill time has passed since its
// last sweep. A sweep visits the entries left since the previous one,
// each created or refreshed by a call since, so its cost is spread over
// those calls. A shard that no call reaches keeps its entries until one
// does: never more than it held when the calls stopped.
//
// It imports nothing of the project: the Redis half of Shared is a Source
// that package redis implements (Buckets).
package ratelimit
