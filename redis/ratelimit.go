package redis

import (
	"context"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// Buckets keeps token buckets in Redis that every node of a cluster
// takes from (a ratelimit.Source): the cluster-wide half of a
// ratelimit.Shared limiter.
//
// Keys: "{prefix}rl:{name}:{key}" is a hash of the bucket's tokens ("t")
// at Redis's time "at" (Unix ms); it expires once the bucket would be full
// again, so a quiet key costs nothing. Every take is one script call
// (one round trip) that refills by Redis's clock, the same for every node.
type Buckets struct {
	rdb    *goredis.Client
	prefix string
}

// NewBuckets returns the buckets named name (one limit: "stomp-send",
// "signup", ...) on rdb, under prefix (DefaultPrefix when empty). The
// caller closes rdb.
func NewBuckets(rdb *goredis.Client, prefix, name string) *Buckets {
	if prefix == "" {
		prefix = DefaultPrefix
	}
	return &Buckets{rdb: rdb, prefix: prefix + "rl:" + name + ":"}
}

// takeTokens refills KEYS[1] to now by ARGV[1] tokens a ms up to ARGV[2]
// and takes up to ARGV[3] whole tokens: it returns {taken, 0}, or {0, ms
// until a token is there}.
var takeTokens = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local rate, burst, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local v = redis.call('HMGET', KEYS[1], 't', 'at')
local tokens = burst
if v[1] then
  tokens = math.min(burst, tonumber(v[1]) + math.max(0, now - tonumber(v[2])) * rate)
end
local got = math.min(n, math.floor(tokens))
if got < 1 then
  return {0, math.ceil((1 - tokens) / rate)}
end
tokens = tokens - got
redis.call('HSET', KEYS[1], 't', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil((burst - tokens) / rate) + 1)
return {got, 0}`)

// Take implements ratelimit.Source.
func (b *Buckets) Take(ctx context.Context, key string, n int, rate float64, burst int) (int, time.Duration, error) {
	out, err := takeTokens.Run(ctx, b.rdb, []string{b.prefix + key},
		strconv.FormatFloat(rate/1000, 'g', -1, 64), burst, n).Int64Slice()
	if err != nil {
		return 0, 0, unavailable("rate limit take", err)
	}
	if len(out) != 2 {
		return 0, 0, unavailable("rate limit take", fmt.Errorf("reply %v: want two numbers", out))
	}
	return int(out[0]), time.Duration(out[1]) * time.Millisecond, nil
}
