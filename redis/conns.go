package redis

import (
	"context"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"
)

// ConnsConfig configures a Conns. Zero fields take the documented
// defaults.
type ConnsConfig struct {
	// Client is the Redis connection (required). Conns does not close it.
	Client *goredis.Client
	// Prefix starts every key. Default DefaultPrefix.
	Prefix string
	// Node is this node's id (required).
	Node string
	// TTL is how long a connection stays counted without a heartbeat of
	// its node: a node killed without Close stops counting after it.
	// Default 15 s.
	TTL time.Duration
	// Timeout bounds each Acquire's round trip. Default 100 ms.
	Timeout time.Duration
	// Registerer, when set, registers the metrics.
	Registerer prometheus.Registerer
	// Logger logs the start and the end of an outage. Default
	// slog.Default().
	Logger *slog.Logger
}

// Conns counts each user's open connections over the cluster, for the
// gateway's per-user connection limit.
//
// Keys: "{prefix}conns:{user}" is a sorted set of the user's connections
// ("{node}/{session}"), each scored by the Redis time (Unix ms) at which
// it stops counting; the node's heartbeat pushes the score of each of its
// connections one TTL ahead every TTL/3, so a dead node's connections stop
// counting within a TTL, and the key expires a TTL after its last write.
//
// Acquire is one round trip (a script that drops expired members, counts
// and adds); Release is queued and written by the heartbeat goroutine at
// once (only that goroutine writes a node's members back or removes them,
// so a release is never undone by a heartbeat), and until then the user's
// next Acquire on this node does not count it. When Redis does not answer
// within Timeout, Acquire allows the connection (the gateway's per-node
// limit still holds), and the heartbeat writes it once Redis is back, so
// the count heals by itself.
type Conns struct {
	rdb     *goredis.Client
	prefix  string
	node    string
	ttl     time.Duration
	timeout time.Duration
	log     *slog.Logger
	failed  prometheus.Counter
	down    atomic.Bool // an outage is under way: logged at its start and end

	kick chan struct{} // a Release is queued
	stop chan struct{}
	done sync.WaitGroup

	mu       sync.Mutex          // guards the following fields
	open     map[string]string   // member ("{node}/{session}") -> user, of this node's counted connections
	released map[string][]string // user -> members to remove from Redis
	flushing map[string][]string // user -> members being removed by flush
}

// NewConns returns a running Conns; Close stops its heartbeat.
func NewConns(cfg ConnsConfig) *Conns {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 15 * time.Second
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 100 * time.Millisecond
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	c := &Conns{
		rdb: cfg.Client, prefix: cfg.Prefix + "conns:", node: cfg.Node, ttl: cfg.TTL, timeout: cfg.Timeout, log: cfg.Logger,
		failed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_redis_conns_errors_total",
			Help: "Calls of the cluster-wide per-user connection count that Redis did not answer in time (the connection was allowed by the per-node limit alone).",
		}),
		kick: make(chan struct{}, 1), stop: make(chan struct{}),
		open: map[string]string{}, released: map[string][]string{},
	}
	if cfg.Registerer != nil {
		cfg.Registerer.MustRegister(c.failed)
	}
	c.done.Go(c.heartbeat)
	return c
}

// acquireConn removes the members whose score passed from KEYS[1], then
// adds ARGV[1] scored now + ARGV[3] ms unless the set holds ARGV[2]
// members already, not counting those of ARGV[4..] (released, and about to
// be removed by the heartbeat goroutine): 1 when added (or there
// already), 0 when full.
var acquireConn = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if not redis.call('ZSCORE', KEYS[1], ARGV[1]) then
  local n = redis.call('ZCARD', KEYS[1])
  for i = 4, #ARGV do
    if redis.call('ZSCORE', KEYS[1], ARGV[i]) then n = n - 1 end
  end
  if n >= tonumber(ARGV[2]) then return 0 end
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`)

// Acquire counts session, a new connection of userID, unless the user
// has max connections over the cluster already (false). When Redis does
// not answer within Timeout it counts the connection locally and returns
// true: the caller's per-node limit is then the only one.
func (c *Conns) Acquire(ctx context.Context, userID, session string, max int) bool {
	member := c.node + "/" + session
	c.mu.Lock()
	// Appended to or replaced, never changed in place: safe to read unlocked.
	gone, going := c.released[userID], c.flushing[userID]
	c.mu.Unlock()
	args := make([]any, 0, 3+len(gone)+len(going))
	args = append(args, member, max, c.ttl.Milliseconds())
	for _, g := range gone {
		args = append(args, g)
	}
	for _, g := range going {
		args = append(args, g)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	added, err := acquireConn.Run(ctx, c.rdb, []string{c.prefix + userID}, args...).Int()
	if err != nil {
		c.fail(err)
		c.mu.Lock()
		added = 1
	} else {
		c.ok()
		c.mu.Lock()
	}
	if added == 1 {
		c.open[member] = userID
	}
	c.mu.Unlock()
	return added == 1
}

// Release stops counting session, a connection of userID that Acquire
// counted. It does not wait for Redis.
func (c *Conns) Release(userID, session string) {
	member := c.node + "/" + session
	c.mu.Lock()
	if _, ok := c.open[member]; ok {
		delete(c.open, member)
		c.released[userID] = append(c.released[userID], member)
	}
	c.mu.Unlock()
	select {
	case c.kick <- struct{}{}:
	default:
	}
}

// refreshConns sets the score of each member ARGV[i+1] of KEYS[i] to now
// + ARGV[1] ms and keeps the keys as long.
var refreshConns = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i, k in ipairs(KEYS) do
  redis.call('ZADD', k, now + tonumber(ARGV[1]), ARGV[i + 1])
  redis.call('PEXPIRE', k, ARGV[1])
end
return #KEYS`)

// heartbeat writes the queued releases as they come, and every TTL/3 the
// scores of this node's connections, until Close.
func (c *Conns) heartbeat() {
	t := time.NewTicker(c.ttl / 3)
	defer t.Stop()
	for {
		select {
		case <-c.stop:
			return
		case <-c.kick:
			c.flush()
		case <-t.C:
			c.flush()
			c.refresh()
		}
	}
}

// flush removes the released connections from Redis; on failure they stay
// queued for the next try. Only the heartbeat goroutine (and Close, after
// it) calls it.
func (c *Conns) flush() {
	c.mu.Lock()
	gone := c.released
	c.released, c.flushing = map[string][]string{}, gone
	c.mu.Unlock()
	if len(gone) == 0 {
		return
	}
	defer func() {
		c.mu.Lock()
		c.flushing = nil
		c.mu.Unlock()
	}()
	ctx, cancel := context.WithTimeout(context.Background(), c.wait())
	defer cancel()
	_, err := c.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for u, members := range gone {
			ms := make([]any, len(members))
			for i, m := range members {
				ms[i] = m
			}
			pipe.ZRem(ctx, c.prefix+u, ms...)
		}
		return nil
	})
	if err != nil {
		c.fail(err)
		c.mu.Lock()
		for u, members := range gone {
			c.released[u] = append(c.released[u], members...)
		}
		c.flushing = nil // in one step: Acquire must not see a member twice
		c.mu.Unlock()
		return
	}
	c.ok()
}

// refresh pushes every open connection's score one TTL ahead, in chunks
// of one script call each; it also writes back those Redis lost (a
// restart, or an Acquire that Redis did not answer).
func (c *Conns) refresh() {
	c.mu.Lock()
	keys := make([]string, 0, len(c.open))
	members := make([]any, 0, len(c.open))
	for m, u := range c.open {
		keys = append(keys, c.prefix+u)
		members = append(members, m)
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), c.wait())
	defer cancel()
	ttl := strconv.FormatInt(c.ttl.Milliseconds(), 10)
	for i := 0; i < len(keys); i += 1000 {
		j := min(len(keys), i+1000)
		args := append([]any{ttl}, members[i:j]...)
		if err := refreshConns.Run(ctx, c.rdb, keys[i:j], args...).Err(); err != nil {
			c.fail(err)
			return
		}
	}
	c.ok()
}

// wait bounds a background call: a heartbeat's worth, at most a second.
func (c *Conns) wait() time.Duration { return min(c.ttl/3, time.Second) }

func (c *Conns) fail(err error) {
	c.failed.Inc()
	if !c.down.Swap(true) {
		c.log.Warn("connection limit: Redis does not answer; counting each user's connections per node until it does", "node", c.node, "err", err)
	}
}

func (c *Conns) ok() {
	if c.down.Swap(false) {
		c.log.Info("connection limit: Redis answers again; counting each user's connections over the cluster", "node", c.node)
	}
}

// Close stops the heartbeat and removes this node's connections from
// Redis (within a second; else they stop counting after the TTL). Call it
// after the gateway's sessions are closed, before closing the client.
func (c *Conns) Close() error {
	close(c.stop)
	c.done.Wait()
	c.mu.Lock()
	for m, u := range c.open {
		c.released[u] = append(c.released[u], m)
	}
	clear(c.open)
	c.mu.Unlock()
	c.flush()
	return nil
}
