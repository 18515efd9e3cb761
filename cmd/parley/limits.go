package main

import (
	"fmt"
	"math"
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
	cfg.KeyLimit = share(cfg.KeyLimit, "apikey")
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

// restSendLimit returns the REST send limit of --rest-send-rate, nil for
// none.
func (c *Config) restSendLimit() (*ratelimit.Limiter, error) {
	return rateLimit("--rest-send-rate", c.RestSendRate)
}

// rateLimit returns a per-user limiter of r a second with bursts of twice
// that, nil for r 0 (no limit); flag names the setting in errors.
func rateLimit(flag string, r float64) (*ratelimit.Limiter, error) {
	switch {
	case r > 0 && !math.IsInf(r, 1):
		return ratelimit.New(ratelimit.Config{Rate: r}), nil // Burst: twice the rate
	case r != 0:
		return nil, fmt.Errorf("%s %g: want a positive rate, or 0 for no limit", flag, r)
	}
	return nil, nil
}

// clusterLogins counts the failed logins of limits across the cluster, in
// Redis, with the node's own counts as the fallback while Redis is
// unreachable (redis/loginlimit.go says why).
func (c *Config) clusterLogins(limits *rest.Config, rdb *goredis.Client) {
	wrap := func(l rest.FailureLimit, name string) rest.FailureLimit {
		local, ok := l.(*ratelimit.Backoff)
		if !ok {
			return l
		}
		return redis.NewLoginLimit(redis.LoginConfig{
			Client: rdb, Prefix: c.RedisPrefix, Name: name,
			Free: local.Free(), Base: time.Second, Max: c.LoginMaxWait, Fallback: local,
		})
	}
	limits.LoginByAddress = wrap(limits.LoginByAddress, "addr")
	limits.LoginByName = wrap(limits.LoginByName, "name")
}

// loginLimits returns the sign-up and login limits and the trusted
// proxies of the REST API (the rest of rest.Config is for the caller).
func (c *Config) loginLimits() (rest.Config, error) {
	var out rest.Config
	var err error
	if out.TrustedProxies, err = rest.ParseTrustedProxies(c.TrustedProxies); err != nil {
		return out, fmt.Errorf("--trusted-proxies: %w", err)
	}
	switch r := c.SignupRate; {
	case r > 0 && !math.IsInf(r, 1):
		if c.SignupBurst < 1 {
			return out, fmt.Errorf("--signup-burst %d: want at least 1", c.SignupBurst)
		}
		out.SignupLimit = ratelimit.New(ratelimit.Config{Rate: r / 60, Burst: c.SignupBurst})
	case r != 0:
		return out, fmt.Errorf("--signup-rate %g: want a positive rate, or 0 for no limit", r)
	}
	switch {
	case c.LoginMaxWait < 0:
		return out, fmt.Errorf("--login-max-wait %v: want a positive duration, or 0 for no login limits", c.LoginMaxWait)
	case c.LoginMaxWait > 0:
		if c.LoginNameFree < 1 || c.LoginAddrFree < 1 {
			return out, fmt.Errorf("--login-name-failures and --login-address-failures: want at least 1")
		}
		out.LoginByName = ratelimit.NewBackoff(ratelimit.BackoffConfig{Free: c.LoginNameFree, Base: time.Second, Max: c.LoginMaxWait})
		out.LoginByAddress = ratelimit.NewBackoff(ratelimit.BackoffConfig{Free: c.LoginAddrFree, Base: time.Second, Max: c.LoginMaxWait})
	}
	if k := c.LoginDeviceKey; k != "" {
		if len(k) < 16 {
			return out, fmt.Errorf("--login-device-key: want at least 16 characters")
		}
		out.DeviceKey = []byte(k)
	}
	return out, nil
}
