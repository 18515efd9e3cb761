// Package redis holds Parley's Redis backends of cluster mode: the
// parley.Presence that maps each user to the nodes holding their sessions
// (seed 002's ws:user:{id} -> serverId), and the shared hot data that lets
// every node serve room info, last messages and first history pages without
// reaching PostgreSQL (seeds 001, 004).
//
// Every key starts with a configurable prefix ("parley:" by default), so
// that several clusters (or test runs) can share one Redis; nothing here
// ever flushes a whole database.
package redis
