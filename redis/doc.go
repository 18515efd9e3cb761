// Package redis holds Parley's Redis backends of cluster mode: Presence
// (each user's nodes, seed 002's ws:user:{id} -> serverId), HotStore (the
// shared hot data that serves room info, last messages, first history
// pages, users and tokens without PostgreSQL, seeds 001 and 004, and
// carries token revocations to every node), Heads (each room's last seq),
// Conns (each user's connections over the cluster), Buckets and
// LoginLimit (the cluster-wide half of the rate limits), and Health, the
// breaker that fails calls at once (ErrDown) while Redis hangs.
//
// Invariants: every key starts with a configurable prefix (DefaultPrefix),
// so that several clusters or test runs share one Redis, and nothing here
// flushes a whole database; no call waits for a hung Redis longer than its
// timeout.
//
// It imports only the domain package, and no other backend.
package redis
