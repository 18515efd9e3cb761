package main

import (
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley/gateway"
	"parley/ratelimit"
	"parley/redis"
	"parley/rest"
)

// The limits of cluster mode hold over the cluster (SECURITY.md, "Limits"):
// each per-node token bucket of the sign-ups, the REST sends and read
// marks and the STOMP sends is replaced by a ratelimit.Shared of the same
// rate and burst that leases its tokens from a bucket in Redis, and the
// gateway counts each user's connections in Redis too. When Redis does
// not answer, each of them counts per node again until it does.

var (
	_ ratelimit.Source    = (*redis.Buckets)(nil)
	_ rest.Limiter        = (*ratelimit.Shared)(nil)
	_ gateway.SendLimiter = (*ratelimit.Shared)(nil)
	_ gateway.UserConns   = (*redis.Conns)(nil)
)

// restLimits sets the REST API's send and read-mark limits, leaving nil
// ones unset (no limit).
func restLimits(cfg *rest.Config, send, read *ratelimit.Limiter) {
	if send != nil {
		cfg.SendLimit = send
	}
	if read != nil {
		cfg.ReadLimit = read
	}
}

// shareRestLimits makes the REST API's limits count over the cluster, in
// rdb under prefix.
func shareRestLimits(cfg *rest.Config, rdb *goredis.Client, prefix string) {
	share := func(l rest.Limiter, name string) rest.Limiter {
		if l == nil {
			return nil
		}
		return shared(rdb, prefix, name, l.Rate(), l.Burst())
	}
	cfg.SendLimit = share(cfg.SendLimit, "rest-send")
	cfg.ReadLimit = share(cfg.ReadLimit, "rest-read")
	cfg.SignupLimit = share(cfg.SignupLimit, "signup")
}

// shared is a limiter of rate and burst over the cluster, its buckets
// named name in rdb.
func shared(rdb *goredis.Client, prefix, name string, rate float64, burst int) *ratelimit.Shared {
	return ratelimit.NewShared(ratelimit.SharedConfig{
		Rate: rate, Burst: burst, Name: name, Source: redis.NewBuckets(rdb, prefix, name),
	})
}

// shareGatewayLimits makes the gateway's send limit and its connections
// per user count over the cluster; m.conns is closed after the gateway.
func (m *Main) shareGatewayLimits(cfg *gateway.Config) {
	c := m.cluster
	cfg.SendLimit = shared(c.rdb, m.Config.RedisPrefix, "stomp-send", cfg.SendRate, cfg.SendBurst)
	ttl := m.Config.PresenceTTL
	if ttl <= 0 {
		ttl = 15 * time.Second
	}
	m.conns = redis.NewConns(redis.ConnsConfig{
		Client: c.rdb, Prefix: m.Config.RedisPrefix, Node: c.node, TTL: ttl, Registerer: m.registry,
	})
	cfg.UserConns = m.conns
}
