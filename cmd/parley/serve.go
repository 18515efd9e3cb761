package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"parley"
	"parley/accept"
	"parley/cache"
	"parley/chat"
	"parley/cluster"
	"parley/dirlock"
	"parley/gateway"
	"parley/history"
	"parley/hub"
	"parley/postgres"
	"parley/ratelimit"
	"parley/redis"
	"parley/rest"
	"parley/roomevents"
	"parley/sqlite"
	"parley/stomp"
	"parley/web"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	goredis "github.com/redis/go-redis/v9"
)

// Config is a node's configuration, from flags and environment.
type Config struct {
	Addr      string        // HTTP listen address
	Data      string        // data directory of the embedded store
	Sync      string        // SQLite synchronous setting: full, normal, off
	TokenTTL  time.Duration // access token lifetime
	MaxBody   int           // largest message body, bytes
	LogLevel  slog.Level
	LogFormat string // text or json

	StompAddr       string        // raw TCP STOMP listen address; "" for none
	DebugAddr       string        // pprof listen address; "" for none
	MetricsAddr     string        // /metrics listen address; "" for Addr
	CacheRecent     int           // newest messages of each room kept in memory
	CacheHistory    int           // MiB of older messages kept in memory, over all rooms; 0: none
	CacheSearch     int           // MiB of search indexes kept in memory, over all rooms; 0: none
	AllowedOrigins  string        // comma-separated Origins allowed on /ws; "" for the same host
	StompHeartBeat  time.Duration // heart-beat interval offered both ways
	StompSendRate   float64       // SEND frames per second per user
	StompQueue      int           // outbound queue bound per connection, frames
	StompWriteDelay time.Duration // a session's writer waits this long after a MESSAGE is queued
	StompWSPack     bool          // one WebSocket frame carries every STOMP frame of a write
	StompWriters    int           // writer goroutines of the STOMP sessions (0: GOMAXPROCS, -1: one per busy session)
	RestSendRate    float64       // REST messages and new rooms per second per user; 0: no limit
	RestReadRate    float64       // REST read marks that move nothing, per second per user; 0: no limit
	TrustedProxies  string        // comma-separated IPs and CIDRs whose X-Forwarded-For is believed
	SignupRate      float64       // sign-ups a minute per client address; 0: no limit
	SignupBurst     int           // sign-ups at once per client address
	LoginNameFree   int           // failed logins per name (or device) before each attempt waits
	LoginAddrFree   int           // failed logins per client address before each attempt waits
	LoginMaxWait    time.Duration // the longest wait, and the time that forgives one failure; 0: no login limits
	LoginDeviceKey  string        // secret that signs device cookies; "" for a random one per process

	// STOMP limits a client cannot stretch (issue 10).
	StompFrameTimeout time.Duration // most time one frame may take to arrive
	StompMaxHeartBeat time.Duration // cap on either interval of a client's heart-beat
	StompMaxUserConns int           // STOMP connections per user on this node
	StompMaxConns     int           // STOMP connections on this node
	StompSendBuffer   int           // kernel send buffer of each STOMP socket, bytes; -1: the system's
	StompMaxSubs      int           // subscriptions per STOMP connection
	StompMaxHeaders   int           // headers per STOMP frame from a client

	TypingMaxMembers int // rooms with more members have no typing events

	HTTPReadTimeout  time.Duration // most time to read a request, headers and body; 0: none
	HTTPWriteTimeout time.Duration // most time from a request's headers to the end of its response; 0: none

	// Cluster mode: all three of Store (postgres://…), Broker and Redis.
	Store       string        // "" for the embedded SQLite store, or a postgres:// URL
	Broker      string        // amqp:// URL of RabbitMQ
	Redis       string        // redis:// URL for presence
	NodeID      string        // this node's id; "" for host name and port
	Prefetch    int           // RabbitMQ consumer prefetch
	PGWriters   int           // group-commit writers of the PostgreSQL store; 0 for the default
	RedisPrefix string        // prefix of every Redis key
	PresenceTTL time.Duration // life of a presence entry without a heartbeat
	HeadCheck   time.Duration // how often a node compares its rooms with their heads in Redis

	// KDF overrides the password hashing cost (tests); zero is the default.
	KDF chat.KDF
}

// flags registers the serve flags on fs, with their defaults.
func (c *Config) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.Addr, "addr", "127.0.0.1:8080", "HTTP and WebSocket listen address")
	fs.StringVar(&c.Data, "data", "./data", "data directory of the embedded SQLite store")
	fs.StringVar(&c.Sync, "sync", "full", "SQLite durability: full (survives power loss), normal (survives a crash of the process), off")
	fs.DurationVar(&c.TokenTTL, "token-ttl", 7*24*time.Hour, "access token lifetime")
	fs.IntVar(&c.MaxBody, "max-body", 4096, "largest message body in bytes")
	fs.TextVar(&c.LogLevel, "log-level", slog.LevelInfo, "log level: debug (also every refusal with its code), info, warn, error")
	fs.StringVar(&c.LogFormat, "log-format", "text", "log lines on standard error: text (key=value) or json (one object a line)")
	fs.StringVar(&c.StompAddr, "stomp-addr", "", "raw TCP STOMP listen address (empty: WebSocket /ws only)")
	fs.IntVar(&c.CacheRecent, "cache-recent", cache.DefaultRecentMessages, "newest messages of each room served from memory (older history pages read the store)")
	fs.IntVar(&c.CacheHistory, "cache-history-mib", history.DefaultMaxBytes>>20, "MiB of older messages kept in memory, over all rooms, in blocks of 100 read once (0: older pages always read the store)")
	fs.IntVar(&c.CacheSearch, "cache-search-mib", cache.DefaultSearchBytes>>20, "MiB of search indexes kept in memory (each searched room's messages and words), over all rooms, least recently searched dropped first; a search whose rooms do not fit uses the store's index (0: always the store's; one node only)")
	fs.StringVar(&c.DebugAddr, "debug-addr", "", "serve Go's pprof profiles at http://ADDR/debug/pprof/ (keep it on loopback; empty: off)")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "serve /metrics at this address instead of on --addr, apart from the public endpoints (may equal --debug-addr; empty: on --addr)")
	fs.DurationVar(&c.HTTPReadTimeout, "http-read-timeout", 10*time.Second, "most time a client may take to send an HTTP request's body, from when the server begins to read it (headers: 10 s), else its connection is closed (not /ws sessions; 0: no limit)")
	fs.DurationVar(&c.HTTPWriteTimeout, "http-write-timeout", 30*time.Second, "most time from the end of an HTTP request's headers to the end of its response, else its connection is closed (not /ws sessions; 0: no limit)")
	fs.StringVar(&c.AllowedOrigins, "allowed-origins", "", "comma-separated Origins allowed to open /ws, or * (empty: the same host)")
	fs.DurationVar(&c.StompHeartBeat, "stomp-heartbeat", 10*time.Second, "STOMP heart-beat interval the server offers both ways")
	fs.Float64Var(&c.StompSendRate, "stomp-send-rate", 20, "SEND frames per second a user may sustain over all of the user's STOMP connections (bursts of twice that); counted per node, or over the cluster in cluster mode")
	fs.Float64Var(&c.RestSendRate, "rest-send-rate", 20, "messages plus new rooms per second a user may sustain over the HTTP API (bursts of twice that), else 429 with Retry-After; counted per node, or over the cluster in cluster mode; 0: no limit")
	fs.Float64Var(&c.RestReadRate, "rest-read-rate", 20, "read marks (PUT /api/rooms/{id}/read) that move no read position a user may sustain per second (bursts of twice that), else 429 with Retry-After; one that moves a position is never limited; counted per node, or over the cluster in cluster mode; 0: no limit")
	fs.StringVar(&c.TrustedProxies, "trusted-proxies", "", "comma-separated IPs and CIDRs of reverse proxies whose X-Forwarded-For tells the client address (empty: the socket peer is the client)")
	fs.Float64Var(&c.SignupRate, "signup-rate", 2, "sign-ups a minute a client address may sustain (bursts of --signup-burst), else 429 with Retry-After; counted per node, or over the cluster in cluster mode; 0: no limit")
	fs.IntVar(&c.SignupBurst, "signup-burst", 10, "sign-ups a client address may make at once")
	fs.IntVar(&c.LoginNameFree, "login-name-failures", 5, "failed logins a name (or a device cookie) may have before each attempt waits 1 s, doubling up to --login-max-wait")
	fs.IntVar(&c.LoginAddrFree, "login-address-failures", 20, "failed logins a client address may have before each attempt waits 1 s, doubling up to --login-max-wait")
	fs.DurationVar(&c.LoginMaxWait, "login-max-wait", 15*time.Minute, "longest wait after failed logins; one failure is forgiven per this much quiet; 0: no login limits")
	fs.StringVar(&c.LoginDeviceKey, "login-device-key", "", "secret that signs device cookies (a browser that logged in skips the name's and the address's waits); give every node the same one (empty: random, so a restart forgets them)")
	fs.BoolVar(&c.StompWSPack, "stomp-ws-pack", false, "let one WebSocket text frame carry every STOMP frame of a socket write, for clients whose STOMP parser reads a WebSocket message as a stream of frames (stompjs and the web client do; one that takes a message for one frame loses the rest)")
	fs.IntVar(&c.StompWriters, "stomp-writers", 0, "writer goroutines that write the STOMP connections' queued frames, each connection in turn, never waiting for a client (one that does not take a write at once gets a goroutine of its own for the rest); 0: one per core (GOMAXPROCS); -1: a goroutine per connection with frames queued")
	fs.DurationVar(&c.StompWriteDelay, "stomp-write-delay", 0, "how long a STOMP connection's writer waits after a MESSAGE is queued for it, so that the messages queued meanwhile share one socket write (any other frame is written at once); 0: no wait")
	fs.IntVar(&c.StompQueue, "stomp-queue", 1024, "outbound frames queued per STOMP connection before it is closed as a slow consumer")
	fs.DurationVar(&c.StompFrameTimeout, "stomp-frame-timeout", 30*time.Second, "most time the server waits for the rest of a STOMP frame it has begun to read (its own stalls not counted), whatever the client's heart-beat, else ERROR")
	fs.IntVar(&c.StompMaxUserConns, "stomp-max-conns-per-user", 32, "STOMP connections one user may hold open (on this node, or over the cluster in cluster mode); the next CONNECT gets ERROR rate_limited")
	fs.IntVar(&c.StompMaxConns, "stomp-max-conns", 10000, "STOMP connections this node holds, signed in or not; over it /ws answers 503 and raw TCP gets ERROR unavailable")
	fs.IntVar(&c.StompMaxSubs, "stomp-max-subscriptions", 256, "subscriptions one STOMP connection may hold; the next SUBSCRIBE gets ERROR invalid")
	fs.IntVar(&c.StompMaxHeaders, "stomp-max-headers", 64, "headers one STOMP frame from a client may carry, else ERROR too_large")
	fs.IntVar(&c.TypingMaxMembers, "typing-max-members", roomevents.DefaultTypingMaxMembers, "rooms with more members than this have no typing events (signals are accepted and absorbed), so one typist costs at most this many deliveries every 2 s")
	fs.IntVar(&c.StompSendBuffer, "stomp-send-buffer", 64<<10, "kernel send buffer (SO_SNDBUF) of each STOMP connection in bytes, so that a client that stops reading is found by --stomp-queue (-1: the system's autotuned buffer)")
	fs.DurationVar(&c.StompMaxHeartBeat, "stomp-max-heartbeat", time.Minute, "largest heart-beat interval accepted from a STOMP client, either way (a larger one is taken as this)")
	fs.StringVar(&c.Store, "store", "", "store: empty for SQLite in --data, or postgres://user@host:port/db (cluster mode)")
	fs.StringVar(&c.Broker, "broker", "", "cluster mode: RabbitMQ URL, amqp://user:pass@host:port/vhost")
	fs.StringVar(&c.Redis, "redis", "", "cluster mode: Redis URL for presence, redis://host:port/db")
	fs.StringVar(&c.NodeID, "node-id", "", "cluster mode: this node's id (default: host name and port)")
	fs.IntVar(&c.Prefetch, "prefetch", 256, "cluster mode: RabbitMQ consumer prefetch")
	fs.IntVar(&c.PGWriters, "pg-writers", postgres.DefaultWriters, "with --store postgres://…: this node's group-commit writers, each running its own transactions on its own connection (a room's writes always go through the same one)")
	fs.StringVar(&c.RedisPrefix, "redis-prefix", "parley:", "cluster mode: prefix of every Redis key")
	fs.DurationVar(&c.PresenceTTL, "presence-ttl", 15*time.Second, "cluster mode: life of a presence entry; the heartbeat runs every third of it")
	fs.DurationVar(&c.HeadCheck, "head-check", 2*time.Second, "cluster mode: how often a node compares its rooms' last seqs in Redis with what it delivered, and reads what it missed from the store")
}

func runServe(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg Config
	fs := flag.NewFlagSet("parley serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.flags(fs)
	fs.String("config", "", configHelp)
	setUsage(fs, stderr, serveUsage)
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return err
	}
	logger, err := newLogger(stderr, cfg.LogFormat, cfg.LogLevel)
	if err != nil {
		return err
	}
	slog.SetDefault(logger)

	m := &Main{Config: cfg}
	if err := m.Open(ctx); err != nil {
		m.Close(context.Background())
		return err
	}
	slog.Info("parley serving", append([]any{"addr", m.Addr(), "stomp_addr", m.StompAddr(), "metrics_addr", m.MetricsAddr(), "data", cfg.Data, "version", versionString()}, cfg.servicesAttrs()...)...)
	<-ctx.Done()
	slog.Info("parley shutting down")
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return m.Close(shutdownCtx)
}

// Main is a running node: everything serve wires together. Tests start it
// the way the serve command does.
type Main struct {
	Config Config

	registry *prometheus.Registry
	lock     *dirlock.Lock // of the data directory, in single-node mode
	store    parley.Store
	durable  parley.Store // the store of record under store's read path (/readyz asks it if its storage is full)
	http     *http.Server
	sweeper  *accept.Sweeper // the HTTP connections' deadlines
	ops      []*opsServer    // /metrics and pprof, when --metrics-addr or --debug-addr is set
	hub      *hub.Hub
	events   *roomevents.Events // room events (events.go)
	gateway  *gateway.Server
	stompLn  net.Listener
	stompRun chan error // the STOMP accept loop's result, once it ends
	ln       net.Listener
	served   chan error
	cluster  *clusterNode // nil in single-node mode
	// rdb is cluster mode's Redis client from its dial until openFanout
	// hands it to the cluster node (nil then): Close closes it if Open
	// failed in between.
	rdb *goredis.Client
	// conns counts each user's STOMP connections over the cluster, in
	// cluster mode (limits.go); closed after the gateway, before rdb.
	conns *redis.Conns
}

// Open opens the stores and starts listening. It returns once the node
// accepts connections. Its steps, in order: the durable store
// (openStore), the layers that serve reads in front of it (openReadPath),
// the chat service and the REST API, the fan-out to sessions
// (openFanout), the commit callbacks, the STOMP gateway (openGateway),
// the routes and the listeners (listen).
func (m *Main) Open(ctx context.Context) error {
	cfg := m.Config
	m.registry = prometheus.NewRegistry()
	m.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	clustered, sendLimit, readLimit, err := cfg.checkOpen()
	if err != nil {
		return err
	}
	// The store reports each commit, in order, to the sinks. They are set
	// once, below, before the listeners start: only a listener can cause
	// a write.
	var sinks []parley.EventSink
	db, err := m.openStore(ctx, func(evs []parley.Event) {
		for _, s := range sinks {
			s(evs)
		}
	})
	if err != nil {
		return err
	}
	m.store, m.durable = db, db // Close closes store; the hot-data layer takes it over below
	// A revocation ends the live sessions of its tokens on this node: the
	// chat service calls endSessions for its own logouts, and in cluster
	// mode the hot store for every node's. The gateway comes later.
	var revokeOn atomic.Pointer[gateway.Server]
	endSessions := func(userID string, tokenHash []byte) {
		if g := revokeOn.Load(); g != nil {
			g.Revoke(userID, tokenHash)
		}
	}
	rp, rdb, err := m.openReadPath(ctx, clustered, db, endSessions)
	if err != nil {
		return err
	}
	m.store = rp.hot

	svc := chat.New(chat.Config{
		Store: rp.reads, TokenTTL: cfg.TokenTTL, MaxBody: cfg.MaxBody, KDF: cfg.KDF, Registerer: m.registry,
		OnRevoke: endSessions, Seen: shownSeen{m},
	})
	api, err := m.openAPI(svc, rdb, sendLimit, readLimit)
	if err != nil {
		return err
	}
	fanout, sessions, err := m.openFanout(clustered, rdb, rp)
	if err != nil {
		return err
	}

	// The commit callbacks, in the order the store calls them for each
	// committed batch (LOCKS.md, "Commit callbacks"): first the hot-data
	// layer (cache.Store or redis.HotStore), so that it holds a commit
	// before any session hears of it, then the fan-out (hub.Hub, or the
	// cluster relay, which delivers to the local hub and to the other
	// nodes), then the room events. On one node the history cache hears
	// the edits and deletions before the fan-out; in cluster mode the
	// relay hands it every node's.
	sinks = []parley.EventSink{rp.hot.Apply}
	if rp.changes != nil && !clustered {
		sinks = append(sinks, rp.changes)
	}
	sinks = append(sinks, fanout, m.events.Apply)

	if err := m.openGateway(svc, sessions); err != nil {
		return err
	}
	revokeOn.Store(m.gateway)
	mux, metrics := m.routes(api, svc)
	return m.listen(mux, metrics)
}

// checkOpen reads the settings Open checks before it opens anything:
// whether the node is clustered, the REST send and read limits, and the
// bounds of --typing-max-members and --pg-writers.
func (c *Config) checkOpen() (clustered bool, sendLimit, readLimit *ratelimit.Limiter, err error) {
	clustered, err = c.clustered()
	if err != nil {
		return false, nil, nil, err
	}
	sendLimit, err = c.restSendLimit()
	if err != nil {
		return false, nil, nil, err
	}
	readLimit, err = rateLimit("--rest-read-rate", c.RestReadRate)
	if err != nil {
		return false, nil, nil, err
	}
	if c.TypingMaxMembers < 0 {
		return false, nil, nil, fmt.Errorf("--typing-max-members %d: want 1 or more", c.TypingMaxMembers)
	}
	if c.PGWriters < 0 {
		return false, nil, nil, fmt.Errorf("--pg-writers %d: want 1 or more (0: the default)", c.PGWriters)
	}
	return clustered, sendLimit, readLimit, nil
}

// openAPI returns the REST API over svc with the login limits and the
// send and read limits; in cluster mode (rdb not nil) the limits are
// counted over the cluster (limits.go).
func (m *Main) openAPI(svc *chat.Service, rdb *goredis.Client, sendLimit, readLimit *ratelimit.Limiter) (*rest.Handler, error) {
	cfg := m.Config
	limits, err := cfg.loginLimits()
	if err != nil {
		return nil, err
	}
	limits.Chat, limits.Registerer = svc, m.registry
	restLimits(&limits, sendLimit, readLimit)
	if rdb != nil { // cluster mode: over the cluster (limits.go)
		cfg.clusterLogins(&limits, rdb)
		shareRestLimits(&limits, rdb, cfg.RedisPrefix)
	}
	return rest.New(limits), nil
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

// openStore opens the durable store, where commits happen: PostgreSQL in
// cluster mode, else SQLite in the data directory, which it locks
// (m.lock). The store calls onCommit after each commit.
func (m *Main) openStore(ctx context.Context, onCommit parley.EventSink) (parley.Store, error) {
	cfg := m.Config
	switch {
	case isPostgres(cfg.Store):
		db, err := postgres.Open(ctx, postgres.Config{URL: cfg.Store, OnCommit: onCommit, Registerer: m.registry,
			Writers: cfg.PGWriters})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		return db, nil
	case cfg.Store == "":
		if err := os.MkdirAll(cfg.Data, 0o750); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		// One process at a time: a second server's commits would be
		// invisible to the first one's caches.
		var err error
		if m.lock, err = dirlock.Acquire(cfg.Data); err != nil {
			return nil, fmt.Errorf("data directory: %w: is another parley serve or migrate running on it?", err)
		}
		sync, err := sqlite.ParseSync(cfg.Sync)
		if err != nil {
			return nil, err
		}
		db, err := sqlite.Open(ctx, sqlite.Config{
			Path: filepath.Join(cfg.Data, "parley.db"), Sync: sync, OnCommit: onCommit, Registerer: m.registry,
		})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		return db, nil
	default:
		return nil, fmt.Errorf("--store %q: want empty (SQLite) or postgres://…", cfg.Store)
	}
}

// hotLayer is the hot-data layer in front of the durable store, kept
// current by its Apply, the first commit callback.
type hotLayer interface {
	parley.Store
	Apply(events []parley.Event)
}

// readPath is the stores in front of the durable one, from the bottom up:
// each reads through the one before it.
type readPath struct {
	// hot is the hot-data layer: cache.Store (memory) on one node,
	// redis.HotStore (shared in Redis) in cluster mode. It is m.store,
	// the layer Close closes, which closes the durable store under it.
	hot hotLayer
	// reads is what the services read: the history cache in front of hot
	// when --cache-history-mib is set, else hot itself.
	reads parley.Store
	// changes is the history cache's Apply, which forgets the blocks that
	// edits and deletions change; nil without the history cache.
	changes parley.EventSink
	// written is how far hot has written this node's commits to Redis, in
	// cluster mode: the relay publishes a commit once it is there.
	written cluster.Watermark
}

// openReadPath puts the hot-data layer and the history cache in front of
// db. In cluster mode it also dials Redis and returns its client, which
// openFanout hands to the cluster node (Close closes it, m.rdb, if Open
// fails before).
func (m *Main) openReadPath(ctx context.Context, clustered bool, db parley.Store, endSessions func(userID string, tokenHash []byte)) (readPath, *goredis.Client, error) {
	cfg := m.Config
	var rp readPath
	var rdb *goredis.Client // cluster mode's Redis, owned by m.cluster once it opens
	if clustered {
		// Every node keeps the shared hot data in Redis current with its
		// own commits, and reads what all the nodes wrote.
		var err error
		if rdb, err = dialRedis(ctx, cfg); err != nil {
			return rp, nil, fmt.Errorf("cluster: %w", err)
		}
		m.rdb = rdb
		h := openHot(cfg, db, rdb, m.registry, endSessions)
		rp.hot, rp.written = h, h
	} else {
		// The in-memory cache is kept current by this node's commits only,
		// so it fronts the store only when no other node writes to it.
		// So is its search index: in cluster mode searches go to the store.
		search := int64(cfg.CacheSearch) << 20
		if cfg.CacheSearch <= 0 {
			search = -1 // off
		}
		rp.hot = cache.New(db, cache.Config{RecentMessages: cfg.CacheRecent, SearchBytes: search, Registerer: m.registry})
	}
	rp.reads = rp.hot
	if cfg.CacheHistory > 0 {
		// Older pages never change: every node keeps its own copy.
		h := history.New(rp.hot, history.Config{MaxBytes: cfg.CacheHistory << 20, Registerer: m.registry})
		rp.reads, rp.changes = h, h.Apply
	}
	return rp, rdb, nil
}

// openFanout makes the hub (m.hub) and, in cluster mode, the cluster node
// (m.cluster, which takes over rdb). It returns the fan-out's commit
// callback, and the gateway's Sessions hook (nil on one node).
func (m *Main) openFanout(clustered bool, rdb *goredis.Client, rp readPath) (parley.EventSink, gateway.Sessions, error) {
	reads := rp.reads
	m.hub = hub.New(hub.Config{Members: reads, Registerer: m.registry})
	m.openEvents(clustered, reads)
	if !clustered {
		return m.hub.Apply, nil, nil
	}
	var err error
	m.rdb = nil // the cluster node owns it from now on, also on failure
	if m.cluster, err = openCluster(m.Config, rdb, reads, rp.written, m.hub, m.events, rp.changes, m.registry); err != nil {
		return nil, nil, fmt.Errorf("cluster: %w", err)
	}
	return m.cluster.relay.Apply, m.cluster, nil
}

// openGateway makes the STOMP gateway (m.gateway).
func (m *Main) openGateway(svc *chat.Service, sessions gateway.Sessions) error {
	cfg := m.Config
	var origins []string
	for _, o := range strings.Split(cfg.AllowedOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			origins = append(origins, o)
		}
	}
	var onPresence func(string) // one node: the gateway knows every session
	if m.cluster == nil {
		onPresence = m.events.PresenceChanged
	}
	gcfg := gateway.Config{
		Chat: svc, Hub: m.hub, AllowedOrigins: origins,
		HeartBeat: stomp.HeartBeat{Send: cfg.StompHeartBeat, Receive: cfg.StompHeartBeat},
		SendRate:  cfg.StompSendRate, SendBurst: int(2 * cfg.StompSendRate), QueueFrames: cfg.StompQueue,
		FrameTimeout: cfg.StompFrameTimeout, MaxHeartBeat: cfg.StompMaxHeartBeat,
		MaxConnsPerUser: cfg.StompMaxUserConns, MaxConns: cfg.StompMaxConns, SendBuffer: cfg.StompSendBuffer,
		MaxSubscriptions: cfg.StompMaxSubs, MaxHeaders: cfg.StompMaxHeaders, WriteDelay: cfg.StompWriteDelay, PackWebSocket: cfg.StompWSPack,
		Writers: cfg.StompWriters,
		Server:  "parley/" + version, Registerer: m.registry, Sessions: sessions,
		Events: m.events, OnPresence: onPresence,
	}
	if m.cluster != nil {
		m.shareGatewayLimits(&gcfg) // limits.go
	}
	var err error
	if m.gateway, err = gateway.New(gcfg); err != nil {
		return fmt.Errorf("stomp gateway: %w", err)
	}
	return nil
}

// routes returns the public HTTP handler, and the /metrics handler (on
// it, unless --metrics-addr serves it apart).
func (m *Main) routes(api http.Handler, svc *chat.Service) (http.Handler, http.Handler) {
	mux := http.NewServeMux()
	mux.Handle("/api/", api)
	mux.Handle("GET /ws", m.gateway)
	mux.Handle("/", web.Handler()) // the browser client; no method in the pattern, which "/api/" would conflict with
	metrics := promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry})
	if m.Config.MetricsAddr == "" {
		mux.Handle("GET /metrics", metrics)
	}
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.Handle("GET /readyz", readyHandler(readyTimeout, m.readyChecks(svc)))
	return apiFirst{api: api, mux: mux}, metrics
}

// apiFirst hands a request under /api/ straight to the API, whose own
// ServeMux cleans the path (redirecting an unclean one) as mux's "/api/"
// route would before it; the rest go to mux. One mux lookup, not two, on
// every API request.
type apiFirst struct {
	api http.Handler
	mux *http.ServeMux
}

func (h apiFirst) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/api/") && r.Method != http.MethodConnect {
		h.api.ServeHTTP(w, r)
		return
	}
	h.mux.ServeHTTP(w, r)
}

// listen opens the listeners and serves on them: HTTP (mux), raw TCP
// STOMP when --stomp-addr is set, and the ops servers.
func (m *Main) listen(mux http.Handler, metrics http.Handler) error {
	cfg := m.Config
	var err error
	m.ln, err = net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	m.http = newHTTPServer(cfg, mux)
	m.sweeper = newSweeper(cfg)
	if cfg.StompAddr != "" {
		if m.stompLn, err = net.Listen("tcp", cfg.StompAddr); err != nil {
			return fmt.Errorf("listen stomp: %w", err)
		}
		m.stompRun = make(chan error, 1)
		go func() {
			err := m.gateway.Serve(m.stompLn)
			if err != nil {
				slog.Error("stomp listener stopped", "addr", m.stompLn.Addr().String(), "err", err)
			}
			m.stompRun <- err
		}()
	}
	if m.ops, err = serveOps(cfg, metrics, m.registry); err != nil {
		return err
	}
	m.served = make(chan error, 1)
	hl := accept.New(m.ln, accept.Config{Name: "http", Registerer: m.registry, Sweeper: m.sweeper})
	go func() { m.served <- m.http.Serve(hl) }()
	return nil
}

// The public HTTP server's timeouts but --http-read-timeout and
// --http-write-timeout.
const (
	httpHeaderTimeout = 10 * time.Second
	httpIdleTimeout   = 2 * time.Minute
)

// newHTTPServer returns the public HTTP server of handler. Its read and
// write timeouts bound every request but /ws: a hijacked connection has
// its deadlines cleared (net/http does it), and the gateway sets its own.
// Served on connections of newSweeper's (accept.Config.Sweeper), the
// timeouts fire up to a sweep period late (a sixteenth of the shortest)
// and cost no timer per request; a hijacked connection gets exact
// deadlines back (accept.Exact).
func newHTTPServer(cfg Config, handler http.Handler) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: httpHeaderTimeout,
		ReadTimeout:       cfg.HTTPReadTimeout,
		WriteTimeout:      cfg.HTTPWriteTimeout,
		IdleTimeout:       httpIdleTimeout,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
		ConnState: func(c net.Conn, s http.ConnState) {
			if s == http.StateHijacked {
				accept.Exact(c)
			}
		},
	}
}

// newSweeper returns the sweeper of the public HTTP server's
// connections' deadlines.
func newSweeper(cfg Config) *accept.Sweeper {
	return accept.NewSweeper(accept.SweepPeriod(httpHeaderTimeout, httpIdleTimeout, cfg.HTTPReadTimeout, cfg.HTTPWriteTimeout))
}

// Addr returns the HTTP address the node listens on.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// MetricsAddr returns the address that serves /metrics: the HTTP one
// unless --metrics-addr is set.
func (m *Main) MetricsAddr() string {
	for _, s := range m.ops {
		if s.metrics {
			return s.Addr()
		}
	}
	return m.Addr()
}

// StompAddr returns the raw TCP STOMP address, "" when not listening.
func (m *Main) StompAddr() string {
	if m.stompLn == nil {
		return ""
	}
	return m.stompLn.Addr().String()
}

// Close stops accepting, lets in-flight requests finish until ctx ends,
// then closes the store after its pending writes. The cluster node, and
// with it the Redis client, closes after the gateway, whose Shutdown
// returns once its Sessions.Closed calls (presence in Redis) are over.
func (m *Main) Close(ctx context.Context) error {
	var errs []error
	// STOMP sessions and HTTP requests drain at the same time, each with
	// the whole budget: one client that does not read its ERROR must not
	// use up the time in-flight REST requests have to finish.
	gatewayDone := make(chan error, 1)
	if m.gateway != nil {
		go func() { gatewayDone <- m.gateway.Shutdown(ctx) }()
	} else {
		gatewayDone <- nil
	}
	if m.http != nil {
		if err := m.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		if m.served != nil { // nil when Open failed before serving
			if err := <-m.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
				errs = append(errs, err)
			}
		} else if m.ln != nil {
			m.ln.Close()
		}
	}
	if m.sweeper != nil { // after the HTTP server: its requests kept their timeouts
		m.sweeper.Close()
	}
	if err := <-gatewayDone; err != nil {
		errs = append(errs, fmt.Errorf("stomp shutdown: %w", err))
	}
	if m.stompRun != nil { // Shutdown closed its listener
		if err := <-m.stompRun; err != nil {
			errs = append(errs, fmt.Errorf("stomp listener: %w", err))
		}
	}
	if m.conns != nil { // after the gateway's sessions, before the Redis client
		m.conns.Close()
	}
	for _, s := range m.ops {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if m.store != nil {
		if err := m.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
	}
	if m.lock != nil { // after the store: its last writes are done
		if err := m.lock.Close(); err != nil {
			errs = append(errs, fmt.Errorf("unlock data directory: %w", err))
		}
	}
	if m.cluster != nil {
		if err := m.cluster.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close cluster: %w", err))
		}
	}
	if m.rdb != nil { // Open failed before the cluster node took it over
		if err := m.rdb.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close redis: %w", err))
		}
	}
	if m.hub != nil {
		m.hub.Close()
	}
	if m.events != nil {
		m.events.Close()
	}
	return errors.Join(errs...)
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
