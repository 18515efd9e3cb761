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
