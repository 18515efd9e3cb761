package redis

import (
	"context"
	"errors"
	"hash/fnv"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// PresenceConfig configures a Presence. Zero fields take the documented
// defaults.
type PresenceConfig struct {
	// Client is the Redis connection (required). The Presence does not
	// close it.
	Client *goredis.Client
	// Prefix starts every key and the notification channel.
	// Default DefaultPrefix.
	Prefix string
	// Node is this node's id (required).
	Node string
	// TTL is how long an entry lives without a heartbeat. Default 15 s.
	TTL time.Duration
	// Heartbeat is how often the node refreshes its entries. Default TTL/3.
	Heartbeat time.Duration
	// OnChange, when set, hears about every node's changes.
	OnChange parley.PresenceHook
	// OnReset, when set, hears that the presence map may be incomplete for
	// a while: this node's subscription came back after a failure (Redis
	// was away, maybe restarted empty), or its heartbeat found its own
	// entries missing (Redis lost its data). Every node writes its entries
	// again within one heartbeat. Nodes and LiveNodes call it too (on the
	// caller's goroutine, before they return) while the epoch marker says
	// Redis lost its data less than a heartbeat ago (see Presence), so
	// that the first route read from an empty Redis is known as unsure.
	// It must not block nor call back into the Presence.
	OnReset func()
	// Registerer, when set, registers the presence metrics.
	Registerer prometheus.Registerer
	// Logger logs heartbeat failures. Default slog.Default().
	Logger *slog.Logger
}

// Presence is the Redis parley.Presence of one node.
//
// Keys: "{prefix}presence:u:{user}" is a sorted set of the user's nodes,
// each scored by the unix millisecond at which its entry expires (readers
// ignore entries past their score, so a dead node's entries vanish after
// the TTL even though Redis cannot expire a set member), with the key
// itself expiring one TTL after the last refresh. "{prefix}presence:n:
// {node}" is the set of a node's users, for DropNode, kept three TTLs past
// the node's last heartbeat. "{prefix}presence:nodes" is the cluster's
// nodes, scored like the entries. Changes are announced on the channel
// "{prefix}presence" (a user id, or "" for everything).
//
// "{prefix}presence:epoch" is the epoch marker: Redis's time (Unix ms)
// when the first heartbeat after Redis lost its data (or the cluster's
// first heartbeat) created it; every heartbeat creates it if it is
// missing and keeps it three TTLs. An empty Redis answers a presence read
// successfully with nobody, which a reader cannot tell from "nobody
// online"; the marker tells it: while the marker is missing, or younger
// than one heartbeat and a second (the time every node takes to write its
// entries again), Nodes and LiveNodes tell OnReset before they return, so
// the relay treats routes as unsure from the first read after a restart
// rather than from the resubscription or the heartbeat that notice it later.
//
// A node killed without Close stops refreshing its score in
// presence:nodes (scored by Redis's clock); the first heartbeat of any node after that score passed
// reaps it (the reap script: its entries are removed and "" announced, once,
// atomically), so the other nodes drop the routes they cached through it
// within one TTL and one heartbeat of its death, and long-online users'
// sets do not collect dead nodes.
//
// The node counts its sessions per user in memory: the first Add and the
// last Remove write to Redis; the heartbeat rewrites every local user, so
// entries lost to a flush or a DropNode come back within one heartbeat.
type Presence struct {
	rdb      *goredis.Client
	cfg      PresenceConfig
	channel  string
	nodeKey  string
	nodesKey string
	epochKey string
	log      *slog.Logger
	m        presenceMetrics
	pubsub   *goredis.PubSub
	stop     chan struct{}
	done     sync.WaitGroup
	stopOnce sync.Once

	offset     atomic.Int64   // Redis's clock minus ours, in ms (see now)
	incomplete atomic.Bool    // the last read found the epoch marker missing or young
	stripes    [64]sync.Mutex // see stripe; each taken before mu

	mu       sync.Mutex     // guards sessions
	sessions map[string]int // user -> sessions on this node
}

var _ parley.Presence = (*Presence)(nil)

// NewPresence returns a running Presence: its heartbeat and, with
// OnChange, its subscription to the change channel.
func NewPresence(cfg PresenceConfig) *Presence {
	if cfg.Prefix == "" {
		cfg.Prefix = DefaultPrefix
	}
	if cfg.TTL <= 0 {
		cfg.TTL = 15 * time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = cfg.TTL / 3
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	p := &Presence{
		rdb:      cfg.Client,
		cfg:      cfg,
		channel:  cfg.Prefix + "presence",
		nodeKey:  cfg.Prefix + "presence:n:" + cfg.Node,
		nodesKey: cfg.Prefix + "presence:nodes",
		epochKey: cfg.Prefix + "presence:epoch",
		log:      cfg.Logger,
		m:        newPresenceMetrics(cfg.Registerer),
		stop:     make(chan struct{}),
		sessions: map[string]int{},
	}
	if cfg.OnChange != nil {
		p.pubsub = p.rdb.Subscribe(context.Background(), p.channel)
		p.done.Go(p.listen)
	}
	p.done.Go(p.heartbeat)
	return p
}

func (p *Presence) userKey(user string) string { return p.cfg.Prefix + "presence:u:" + user }

// now is the time in Unix milliseconds by Redis's clock, as far as the
// last heartbeat measured it: entries are scored and read by the one clock
// every node shares, so a node whose own clock is off neither hides its
// users nor sees others' as expired.
func (p *Presence) now() int64 { return time.Now().UnixMilli() + p.offset.Load() }

func (p *Presence) expiry() float64 {
	return float64(p.now() + p.cfg.TTL.Milliseconds())
}

// stripe returns the lock that orders userID's Add and Remove: each holds
// it from counting the session to the end of its Redis write, so that a
// quick close and reopen on this node reach Redis in that order (reversed,
// the entry would be gone while the user has a session).
func (p *Presence) stripe(userID string) *sync.Mutex {
	h := fnv.New32a()
	h.Write([]byte(userID))
	return &p.stripes[h.Sum32()%uint32(len(p.stripes))]
}

// Add implements parley.Presence.
func (p *Presence) Add(ctx context.Context, userID string) error {
	st := p.stripe(userID)
	st.Lock()
	defer st.Unlock()
	p.mu.Lock()
	p.sessions[userID]++
	first := p.sessions[userID] == 1
	n := len(p.sessions)
	p.mu.Unlock()
	p.m.users.Set(float64(n))
	if !first {
		return nil
	}
	_, err := p.rdb.TxPipelined(ctx, func(pipe goredis.Pipeliner) error {
		p.queueRefresh(ctx, pipe, []string{userID})
		pipe.Publish(ctx, p.channel, userID)
		return nil
	})
	p.m.count(err)
	return unavailable("presence add", err)
}

// queueRefresh queues the writes that (re)register users on this node.
func (p *Presence) queueRefresh(ctx context.Context, pipe goredis.Pipeliner, users []string) []*goredis.IntCmd {
	exp := p.expiry()
	added := make([]*goredis.IntCmd, len(users))
	members := make([]any, len(users))
	for i, u := range users {
		k := p.userKey(u)
		added[i] = pipe.ZAdd(ctx, k, goredis.Z{Score: exp, Member: p.cfg.Node})
		pipe.PExpire(ctx, k, p.cfg.TTL)
		members[i] = u
	}
	pipe.SAdd(ctx, p.nodeKey, members...)
	pipe.PExpire(ctx, p.nodeKey, 3*p.cfg.TTL)
	return added
}

// Remove implements parley.Presence.
func (p *Presence) Remove(ctx context.Context, userID string) error {
	st := p.stripe(userID)
	st.Lock()
	defer st.Unlock()
	p.mu.Lock()
	n, ok := p.sessions[userID]
	if ok && n > 1 {
		p.sessions[userID] = n - 1
	} else {
		delete(p.sessions, userID)
	}
	users := len(p.sessions)
	p.mu.Unlock()
	p.m.users.Set(float64(users))
	if !ok || n > 1 {
		return nil
	}
	return unavailable("presence remove", p.removeEntry(ctx, userID, true))
}

// removeEntry deletes userID's entry on this node, announcing it when
// announce is set.
func (p *Presence) removeEntry(ctx context.Context, userID string, announce bool) error {
	_, err := p.rdb.TxPipelined(ctx, func(pipe goredis.Pipeliner) error {
		pipe.ZRem(ctx, p.userKey(userID), p.cfg.Node)
		pipe.SRem(ctx, p.nodeKey, userID)
		if announce {
			p.queueSeen(ctx, pipe, userID)
			pipe.Publish(ctx, p.channel, userID)
		}
		return nil
	})
	p.m.count(err)
	return err
}

// Nodes implements parley.Presence: one pipelined ZRANGEBYSCORE per user.
func (p *Presence) Nodes(ctx context.Context, userIDs []string) (map[string][]string, error) {
	out := make(map[string][]string, len(userIDs))
	if len(userIDs) == 0 {
		return out, nil
	}
	now := strconv.FormatInt(p.now(), 10)
	cmds := make([]*goredis.StringSliceCmd, len(userIDs))
	var epoch *goredis.StringCmd
	_, err := p.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		for i, u := range userIDs {
			cmds[i] = pipe.ZRangeByScore(ctx, p.userKey(u), &goredis.ZRangeBy{Min: "(" + now, Max: "+inf"})
		}
		epoch = pipe.Get(ctx, p.epochKey) // last: a Nil error then means every other command succeeded
		return nil
	})
	if errors.Is(err, goredis.Nil) { // the marker is missing: told below
		err = nil
	}
	p.m.count(err)
	p.m.lookups.Add(float64(len(userIDs)))
	if err != nil {
		return nil, unavailable("presence nodes", err)
	}
	p.checkEpoch(epoch)
	for i, u := range userIDs {
		if nodes := cmds[i].Val(); len(nodes) > 0 {
			out[u] = nodes
		}
	}
	return out, nil
}

// dropNode removes a node's entries and announces it, atomically.
var dropNode = goredis.NewScript(`
local users = redis.call('SMEMBERS', KEYS[1])
for _, u in ipairs(users) do redis.call('ZREM', ARGV[1] .. u, ARGV[2]) end
redis.call('DEL', KEYS[1])
redis.call('PUBLISH', ARGV[3], '')
return #users`)

// DropNode implements parley.Presence.
func (p *Presence) DropNode(ctx context.Context, node string) error {
	err := dropNode.Run(ctx, p.rdb, []string{p.cfg.Prefix + "presence:n:" + node},
		p.cfg.Prefix+"presence:u:", node, p.channel).Err()
	p.m.count(err)
	return unavailable("presence drop node", err)
}

// LiveNodes returns the nodes whose heartbeat is current (presence:nodes
// scores not yet passed), this node included once it has registered. Right
// after Redis lost its data it may name only the nodes that have beaten
// since. Fails with CodeUnavailable when Redis is unreachable.
func (p *Presence) LiveNodes(ctx context.Context) ([]string, error) {
	now := strconv.FormatInt(p.now(), 10)
	var epoch *goredis.StringCmd
	var live *goredis.StringSliceCmd
	_, err := p.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
		live = pipe.ZRangeByScore(ctx, p.nodesKey, &goredis.ZRangeBy{Min: "(" + now, Max: "+inf"})
		epoch = pipe.Get(ctx, p.epochKey) // last, as in Nodes
		return nil
	})
	if errors.Is(err, goredis.Nil) { // the marker is missing: told below
		err = nil
	}
	p.m.count(err)
	if err != nil {
		return nil, unavailable("presence live nodes", err)
	}
	p.checkEpoch(epoch)
	return live.Val(), nil
}

// checkEpoch tells OnReset when the epoch marker read with a presence
// read is missing or younger than a heartbeat and a second: Redis lost
// its data lately, and the entries of some nodes may not be back yet. It
// logs the start and the end of such a spell.
func (p *Presence) checkEpoch(epoch *goredis.StringCmd) {
	young := true
	if at, err := epoch.Int64(); err == nil {
		young = p.now()-at < (p.cfg.Heartbeat + time.Second).Milliseconds()
	}
	if !young {
		if p.incomplete.Swap(false) {
			p.log.Info("presence: every node has had a heartbeat since the epoch marker was made; routes are sure again", "node", p.cfg.Node)
		}
		return
	}
	if !p.incomplete.Swap(true) {
		p.log.Warn("presence: the epoch marker is missing or new (Redis lost its data, or the cluster's first start); routes are unsure until every node has written its entries again", "node", p.cfg.Node)
	}
	if p.cfg.OnReset != nil {
		p.cfg.OnReset()
	}
}

// Ping implements parley.Presence.
func (p *Presence) Ping(ctx context.Context) error {
	return unavailable("presence ping", p.rdb.Ping(ctx).Err())
}

// Close implements parley.Presence: it stops the heartbeat and the
// notifications and removes this node's entries.
func (p *Presence) Close() error {
	if !p.halt() {
		return nil
	}
	p.mu.Lock()
	users := make([]string, 0, len(p.sessions))
	for u := range p.sessions {
		users = append(users, u)
	}
	clear(p.sessions)
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_, err := p.rdb.TxPipelined(ctx, func(pipe goredis.Pipeliner) error {
		for _, u := range users {
			pipe.ZRem(ctx, p.userKey(u), p.cfg.Node)
			p.queueSeen(ctx, pipe, u)
		}
		pipe.Del(ctx, p.nodeKey)
		pipe.ZRem(ctx, p.nodesKey, p.cfg.Node)
		pipe.Publish(ctx, p.channel, "")
		return nil
	})
	return unavailable("presence close", err)
}

// Crash stops the heartbeat and the notifications without removing this
// node's entries, as a killed node would: they expire after the TTL.
func (p *Presence) Crash() { p.halt() }

// halt stops the goroutines; false if they were stopped already.
func (p *Presence) halt() bool {
	stopped := false
	p.stopOnce.Do(func() {
		close(p.stop)
		if p.pubsub != nil {
			p.pubsub.Close()
		}
		p.done.Wait()
		stopped = true
	})
	return stopped
}

// presenceMetrics are the presence's Prometheus collectors.
type presenceMetrics struct {
	users      prometheus.Gauge
	lookups    prometheus.Counter
	errors     prometheus.Counter
	reaped     prometheus.Counter
	heartbeats prometheus.Counter
	restored   prometheus.Counter
}

func newPresenceMetrics(reg prometheus.Registerer) presenceMetrics {
	m := presenceMetrics{
		users: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_presence_local_users", Help: "Users with a session on this node.",
		}),
		lookups: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_presence_lookups_total", Help: "Users looked up in the presence map.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_presence_errors_total", Help: "Failed presence calls to Redis.",
		}),
		reaped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_presence_nodes_reaped_total", Help: "Nodes whose heartbeat stopped, dropped from presence by this node.",
		}),
		heartbeats: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_presence_heartbeats_total", Help: "Completed presence heartbeats.",
		}),
		restored: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_presence_restored_total", Help: "Entries a heartbeat found missing and wrote again.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.users, m.lookups, m.errors, m.reaped, m.heartbeats, m.restored)
	}
	return m
}

func (m presenceMetrics) count(err error) {
	if err != nil {
		m.errors.Inc()
	}
}
