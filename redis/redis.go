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

import (
	"errors"
	"fmt"

	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// DefaultPrefix starts every key when the config gives no prefix.
const DefaultPrefix = "parley:"

// NewClient returns a client for a redis:// URL
// (redis://[user:password@]host:port/db). The caller closes it after the
// backends that use it.
func NewClient(url string) (*goredis.Client, error) {
	opt, err := goredis.ParseURL(url)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	return goredis.NewClient(opt), nil
}

// unavailable wraps a Redis failure of op as parley.CodeUnavailable,
// keeping the cause for the logs.
func unavailable(op string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("%s: %w: %w", op, parley.Errorf(parley.CodeUnavailable, "redis unavailable"), err)
}

// isNil reports whether err is Redis's "no such key".
func isNil(err error) bool { return errors.Is(err, goredis.Nil) }
