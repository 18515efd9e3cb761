package redis

import (
	"context"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"sync/atomic"
	"time"

	"parley/ratelimit"

	goredis "github.com/redis/go-redis/v9"
)

// Failed logins across the cluster: a LoginLimit keeps, in Redis, what
// ratelimit.Backoff keeps in one node's memory (the same rules, the same
// answers), so that a name, an address or a device has one budget of
// failures in the whole cluster, not one a node.
//
// Each key has two Redis keys, in one hash slot: a hash of its failures
// (count c, the last at a, in ms) that expires once they are forgiven and
// the wait is over, and a sorted set of the attempts in flight, scored by
// when their reservation lapses (Lease), so that a node that dies with
// attempts in flight blocks nobody for longer than that. Begin decides in
// one script (one round trip); an attempt's end is another, and a
// success's Reset one more. An attempt with no room (others in flight,
// on any node) asks again, each time after a longer pause up to
// loginPollMax, until its context is done.
//
// When Redis fails (an error or Timeout), the limit falls back to the
// node's own counts (Fallback): the limits then hold per node, as on one
// node, so a guesser gains at most a budget per node while Redis is
// unreachable and nobody is locked out by an outage. Failing open would
// hand a guesser unlimited tries in an outage; failing closed would lock
// every user out. After a failure the node uses its own counts for
// Recheck before it tries Redis again, so a hung Redis costs one Timeout
// per Recheck, not one a login. The failures counted locally meanwhile
// are not copied to Redis, and a failure whose end cannot reach Redis is
// lost (its reservation lapses after Lease).

// localLimit is what a LoginLimit needs of its fallback (the node's own
// counts, ratelimit.Backoff).
type localLimit interface {
	Begin(ctx context.Context, key string) (end func(failed bool), retryAfter time.Duration, err error)
	Reset(key string)
}

// LoginConfig configures a LoginLimit. Zero fields take the documented
// defaults; Free, Base, Max and Decay mean what they mean in
// ratelimit.BackoffConfig, with the same defaults.
type LoginConfig struct {
	// Client is the Redis client (required).
	Client *goredis.Client
	// Prefix starts every key. Default DefaultPrefix.
	Prefix string
	// Name tells this limit's keys from another's ("addr", "name")
	// (required).
	Name string
	// Free is the number of failures a key may have before it must wait.
	// Default 5.
	Free int
	// Base is the wait after the Free-th failure, doubled by each failure
	// after it. Default 1 s.
	Base time.Duration
	// Max caps the wait. Default 15 minutes.
	Max time.Duration
	// Decay forgives one failure per Decay without a new one. Default Max.
	Decay time.Duration
	// Fallback counts the failures while Redis is unreachable (required):
	// the node's own limit, with the same settings.
	Fallback localLimit
	// Timeout bounds each call to Redis. Default 500 ms.
	Timeout time.Duration
	// Recheck is how long the node counts on its own after a Redis
	// failure before it tries Redis again. Default 5 s.
	Recheck time.Duration
	// Lease is how long an attempt in flight holds its reservation if its
	// node never ends it. Default 1 minute.
	Lease time.Duration
	// Now is the clock of the failures (Redis compares the times nodes
	// send it). Default time.Now.
	Now func() time.Time
	// Logger logs the start and end of a Redis outage. Default
	// slog.Default().
	Logger *slog.Logger
}

// LoginLimit slows down failed logins of a key across the cluster (see
// the comment at the top of loginlimit.go). It is safe for concurrent
// use and has no goroutines.
type LoginLimit struct {
	cfg    LoginConfig
	node   string       // random, in every reservation id
	seq    atomic.Int64 // numbers this node's reservations
	down   atomic.Int64 // until when (UnixNano) the node counts on its own; 0: Redis is up
	prefix string       // cfg.Prefix + "login:" + cfg.Name + ":"
}

// loginPollMin and loginPollMax bound the pause of an attempt that waits
// for others in flight before it asks Redis again.
const (
	loginPollMin = 5 * time.Millisecond
	loginPollMax = 100 * time.Millisecond
)

// scriptLoginBegin: KEYS[1] the key's failures, KEYS[2] its attempts in
// flight; ARGV now, free, base, max, decay (ms), the reservation's id,
// lease (ms). Returns {1} with the attempt reserved, {0, ms} when the key
// waits for its failures that long, {2} when it must wait for the
// attempts in flight. The rules are ratelimit.Backoff's.
var scriptLoginBegin = goredis.NewScript(`
local now, free, base, max, decay = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local inflight = redis.call('ZCARD', KEYS[2])
local f = redis.call('HMGET', KEYS[1], 'c', 'a')
local c, a = tonumber(f[1]) or 0, tonumber(f[2]) or 0
if c > 0 then
  local w = 0
  if c >= free then w = math.min(max, base * 2 ^ math.min(c - free, 62)) end
  if a + w - now > 0 then return {0, a + w - now} end
end
local n = math.max(0, c - math.floor(math.max(0, now - a) / decay))
if n + inflight < free or inflight == 0 then
  redis.call('ZADD', KEYS[2], now + tonumber(ARGV[7]), ARGV[6])
  redis.call('PEXPIRE', KEYS[2], ARGV[7])
  return {1}
end
return {2}
`)

// scriptLoginEnd: KEYS and ARGV[1..5] as for scriptLoginBegin, ARGV[6]
// the reservation's id, ARGV[7] "1" if the attempt failed. Ends the
// reservation and counts the failure; the failures' hash expires once
// they are all forgiven and the wait is over.
var scriptLoginEnd = goredis.NewScript(`
local now, free, base, max, decay = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
redis.call('ZREM', KEYS[2], ARGV[6])
if ARGV[7] ~= '1' then return 0 end
local f = redis.call('HMGET', KEYS[1], 'c', 'a')
local c, a = tonumber(f[1]) or 0, tonumber(f[2]) or 0
c = math.max(0, c - math.floor(math.max(0, now - a) / decay)) + 1
local w = 0
if c >= free then w = math.min(max, base * 2 ^ math.min(c - free, 62)) end
redis.call('HSET', KEYS[1], 'c', c, 'a', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(math.max(c * decay, w)))
return c
`)

// NewLoginLimit returns a LoginLimit.
func NewLoginLimit(cfg LoginConfig) *LoginLimit {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	b := ratelimit.BackoffConfig{Free: cfg.Free, Base: cfg.Base, Max: cfg.Max, Decay: cfg.Decay, Now: cfg.Now}.WithDefaults()
	cfg.Free, cfg.Base, cfg.Max, cfg.Decay, cfg.Now = b.Free, b.Base, b.Max, b.Decay, b.Now
	if cfg.Timeout <= 0 {
		cfg.Timeout = 500 * time.Millisecond
	}
	if cfg.Recheck <= 0 {
		cfg.Recheck = 5 * time.Second
	}
	if cfg.Lease <= 0 {
		cfg.Lease = time.Minute
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &LoginLimit{cfg: cfg, node: crand.Text()[:16], prefix: cfg.Prefix + "login:" + cfg.Name + ":"}
}

// keys returns the Redis keys of key: its failures and its attempts in
// flight, in one hash slot. key is hashed: a name tried can be any
// string, and Redis keeps only a fixed-size digest of it.
func (l *LoginLimit) keys(key string) []string {
	sum := sha256.Sum256([]byte(key))
	k := l.prefix + "{" + hex.EncodeToString(sum[:16]) + "}"
	return []string{k, k + ":inflight"}
}

// args returns the scripts' first arguments at now.
func (l *LoginLimit) args(now time.Time) []any {
	ms := func(d time.Duration) int64 { return d.Milliseconds() }
	return []any{now.UnixMilli(), l.cfg.Free, ms(l.cfg.Base), ms(l.cfg.Max), ms(l.cfg.Decay)}
}

// Begin starts a login attempt of key, as ratelimit.Backoff.Begin does,
// counted across the cluster: a nil end and the wait left when key waits
// for its failures; else end, to call exactly once with the outcome; an
// error, reserving nothing, when ctx is done while the attempts in flight
// on every node leave no room. While Redis is unreachable it answers
// from the node's own counts (Fallback).
func (l *LoginLimit) Begin(ctx context.Context, key string) (end func(failed bool), retryAfter time.Duration, err error) {
	keys := l.keys(key)
	pause := loginPollMin
	for {
		if !l.up() {
			return l.cfg.Fallback.Begin(ctx, key)
		}
		id := l.node + ":" + strconv.FormatInt(l.seq.Add(1), 36)
		args := append(l.args(l.cfg.Now()), id, l.cfg.Lease.Milliseconds())
		// Not bounded by ctx: a script cut short might have reserved an
		// attempt that nobody would end.
		rctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
		res, err := scriptLoginBegin.Run(rctx, l.cfg.Client, keys, args...).Int64Slice()
		cancel()
		if err != nil || len(res) == 0 {
			l.failed(fmt.Errorf("login limit begin: %w", err))
			continue // the fallback answers
		}
		l.recovered()
		switch res[0] {
		case 1:
			return func(failed bool) { l.end(keys, id, failed) }, 0, nil
		case 0:
			return nil, time.Duration(res[1]) * time.Millisecond, nil
		}
		t := time.NewTimer(pause/2 + rand.N(pause)) // jittered, so that waiters spread
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return nil, 0, fmt.Errorf("wait for the attempts in flight: %w", ctx.Err())
		}
		pause = min(2*pause, loginPollMax)
	}
}

// end ends the reservation id of the key with keys.
func (l *LoginLimit) end(keys []string, id string, failed bool) {
	f := "0"
	if failed {
		f = "1"
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
	defer cancel()
	args := append(l.args(l.cfg.Now()), id, f)
	if err := scriptLoginEnd.Run(ctx, l.cfg.Client, keys, args...).Err(); err != nil && !isNil(err) {
		l.failed(fmt.Errorf("login limit end: %w", err))
	}
}

// Reset forgets key's failures across the cluster (and on this node);
// its attempts in flight stay reserved until they end.
func (l *LoginLimit) Reset(key string) {
	l.cfg.Fallback.Reset(key)
	if !l.up() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), l.cfg.Timeout)
	defer cancel()
	if err := l.cfg.Client.Del(ctx, l.keys(key)[0]).Err(); err != nil {
		l.failed(fmt.Errorf("login limit reset: %w", err))
	}
}

// up reports whether to ask Redis: it has not failed within Recheck.
func (l *LoginLimit) up() bool {
	d := l.down.Load()
	return d == 0 || time.Now().UnixNano() >= d
}

// failed notes a Redis failure: the node counts on its own for Recheck.
func (l *LoginLimit) failed(err error) {
	if l.down.Swap(time.Now().Add(l.cfg.Recheck).UnixNano()) == 0 {
		l.cfg.Logger.Warn("login limits: redis unreachable; counting failed logins on this node alone",
			"limit", l.cfg.Name, "recheck", l.cfg.Recheck, "err", err)
	}
}

// recovered notes that Redis answered again.
func (l *LoginLimit) recovered() {
	if l.down.Load() != 0 && l.down.Swap(0) != 0 {
		l.cfg.Logger.Info("login limits: redis answers again; counting failed logins across the cluster", "limit", l.cfg.Name)
	}
}
