package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"time"

	"parley"
	"parley/accept"
	"parley/cache"
	"parley/chat"
	"parley/dirlock"
	"parley/gateway"
	"parley/history"
	"parley/hub"
	"parley/jwtauth"
	"parley/postgres"
	"parley/ratelimit"
	"parley/redis"
	"parley/rest"
	"parley/retention"
	"parley/roomevents"
	"parley/webhook"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
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
	SearchBatch     int           // messages per search indexer transaction; 0: the store's default
	AllowedOrigins  string        // comma-separated Origins allowed on /ws; "" for the same host
	StompHeartBeat  time.Duration // heart-beat interval offered both ways
	StompSendRate   float64       // SEND frames per second per user
	StompQueue      int           // outbound queue bound per connection, frames
	StompWriteDelay time.Duration // a session's writer waits this long after a MESSAGE is queued
	StompWSPack     bool          // one WebSocket frame carries every STOMP frame of a write
	StompWriters    int           // writer goroutines of the STOMP sessions (0: GOMAXPROCS, -1: one per busy session)
	Procs           int           // GOMAXPROCS serve sets (0: the runtime's, at least minProcs on SQLite unless GOMAXPROCS is in the environment; -1: the runtime's)
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

	DeletedNameHold time.Duration // how long a deleted account's name is held back (account.go)
	JWT             jwtConfig     // JWT sign-in (jwt.go)
	OIDC            oidcConfig    // OpenID Connect sign-in (oidc.go)
	NoPasswordLogin bool          // --password-login=false: sign-up and password login are off
	// KeepDeletedMessages: a deleted account's messages keep their text
	// (--deleted-account-messages=keep; account.go).
	KeepDeletedMessages bool
	APIKeyWatch         time.Duration // how often revoked API keys are looked for (apikey.go)
	APIKeyRate          float64       // REST calls per second per API key; 0: no limit
	Webhooks            webhookConfig // outgoing webhooks (webhook.go)
	Files               filesConfig   // files and attachments (files.go)

	Retention         time.Duration // how long messages are kept; 0: forever
	RetentionInterval time.Duration // time between the retention sweeper's passes

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

	// DeleteSignInWindow: how recent the sign-in behind the token of an
	// account with no password must be for DELETE /api/me (account.go).
	DeleteSignInWindow time.Duration
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
	fs.IntVar(&c.SearchBatch, "search-batch", 0, "messages the search indexer indexes in one transaction, after their send (0: 2048): smaller holds the SQLite writer less at a time, larger catches up with a backlog in fewer commits")
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
	fs.IntVar(&c.StompWriters, "stomp-writers", 0, "writer goroutines that write the STOMP connections' queued frames, each connection in turn, never waiting for a client (one that does not take a write at once gets a goroutine of its own for the rest); 0: one per Go processor (GOMAXPROCS, see --procs); -1: a goroutine per connection with frames queued")
	fs.IntVar(&c.Procs, "procs", 0, "Go processors (GOMAXPROCS) that run the server's goroutines at once; 0: the runtime's choice, but at least 2 with the embedded SQLite store, so that its writer blocked in a call into SQLite or an fsync shares a one-core machine with the fan-out instead of stopping it; -1: the runtime's choice; the GOMAXPROCS environment variable, when set, is kept")
	fs.DurationVar(&c.StompWriteDelay, "stomp-write-delay", 0, "how long a STOMP connection's writer waits after a MESSAGE is queued for it, so that the messages queued meanwhile share one socket write (any other frame is written at once); 0: no wait")
	fs.IntVar(&c.StompQueue, "stomp-queue", 1024, "outbound frames queued per STOMP connection before it is closed as a slow consumer")
	fs.DurationVar(&c.StompFrameTimeout, "stomp-frame-timeout", 30*time.Second, "most time the server waits for the rest of a STOMP frame it has begun to read (its own stalls not counted), whatever the client's heart-beat, else ERROR")
	fs.IntVar(&c.StompMaxUserConns, "stomp-max-conns-per-user", 32, "STOMP connections one user may hold open (on this node, or over the cluster in cluster mode); the next CONNECT gets ERROR rate_limited")
	fs.IntVar(&c.StompMaxConns, "stomp-max-conns", 10000, "STOMP connections this node holds, signed in or not; over it /ws answers 503 and raw TCP gets ERROR unavailable")
	fs.IntVar(&c.StompMaxSubs, "stomp-max-subscriptions", 256, "subscriptions one STOMP connection may hold; the next SUBSCRIBE gets ERROR invalid")
	fs.IntVar(&c.StompMaxHeaders, "stomp-max-headers", 64, "headers one STOMP frame from a client may carry, else ERROR too_large")
	fs.DurationVar(&c.Retention, "retention", 0, "how long messages are kept by default, e.g. 720h (a room's own retention_seconds replaces it): older ones become tombstones (their text gone from the store, the search index and every cache; clients get a deleted event); 0: forever")
	fs.DurationVar(&c.RetentionInterval, "retention-interval", time.Minute, "time between the passes of the retention sweeper (for --retention and the rooms' own retention)")
	c.accountFlags(fs)
	c.apiKeyFlags(fs)
	c.webhookFlags(fs)
	c.Files.flags(fs)
	c.JWT.flags(fs)
	c.OIDC.flags(fs)
	fs.Var(notFlag{&c.NoPasswordLogin}, "password-login", "sign-up and password login (false: POST /api/users and POST /api/tokens answer 403 and the web client shows only the other ways in, such as --oidc-issuer)")
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
	gomaxprocs := setProcs(cfg.Procs, os.Getenv("GOMAXPROCS"), cfg.Store == "") // before Open: the STOMP writers follow it

	m := &Main{Config: cfg}
	if err := m.Open(ctx); err != nil {
		m.Close(context.Background())
		return err
	}
	slog.Info("parley serving", append([]any{"addr", m.Addr(), "stomp_addr", m.StompAddr(), "metrics_addr", m.MetricsAddr(), "data", cfg.Data, "procs", gomaxprocs, "version", versionString()}, cfg.servicesAttrs()...)...)
	slog.Info("chat page: " + chatURL(m.Addr()))
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

	registry  *prometheus.Registry
	lock      *dirlock.Lock // of the data directory, in single-node mode
	store     parley.Store
	durable   parley.Store // the store of record under store's read path (/readyz asks it if its storage is full)
	http      *http.Server
	sweeper   *accept.Sweeper    // the HTTP connections' deadlines
	expiry    *retention.Sweeper // the retention sweeper; nil when the store cannot expire
	keyWatch  *chat.KeyWatch     // ends the sessions of API keys revoked elsewhere (apikey.go); nil-safe
	hooks     *webhook.Manager   // outgoing webhooks' deliveries (webhook.go); nil when the store keeps none
	fileSweep *chat.FileSweep    // removes orphaned files (files.go); nil-safe
	ops       []*opsServer       // /metrics and pprof, when --metrics-addr or --debug-addr is set
	hub       *hub.Hub
	events    *roomevents.Events // room events (events.go)
	gateway   *gateway.Server
	stompLn   net.Listener
	stompRun  chan error // the STOMP accept loop's result, once it ends
	ln        net.Listener
	served    chan error
	cluster   *clusterNode // nil in single-node mode
	// rdb is cluster mode's Redis client from its dial until openFanout
	// hands it to the cluster node (nil then): Close closes it if Open
	// failed in between.
	rdb *goredis.Client
	// conns counts each user's STOMP connections over the cluster, in
	// cluster mode (limits.go); closed after the gateway, before rdb.
	conns *redis.Conns
	jwt   *jwtauth.Verifier // JWT sign-in (jwt.go); nil when off
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
	if m.Config.NodeID == "" {
		// Chosen once: the cluster relay, the hot data's announced
		// changes and the webhooks' leases must name the node alike.
		m.Config.NodeID = defaultNodeID(cfg.Addr)
		cfg.NodeID = m.Config.NodeID
	}

	clustered, sendLimit, readLimit, err := cfg.checkOpen()
	if err != nil {
		return err
	}
	// The store reports each commit, in order, to the sinks. They are set
	// once, below, before the listeners start: only a listener can cause
	// a write.
	var sinks []parley.EventSink
	var intend func(rooms map[string]int) func(bool) // cluster mode: the hot data's Intend
	db, err := m.openStore(ctx, func(evs []parley.Event) {
		for _, s := range sinks {
			s(evs)
		}
	}, func(rooms map[string]int) func(bool) {
		if intend != nil {
			return intend(rooms)
		}
		return nil
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
	intend = rp.intend

	jv, err := m.openJWT()
	if err != nil {
		return err
	}
	fc, err := m.openFiles(ctx, db)
	if err != nil {
		return err
	}
	svc := chat.New(chat.Config{
		Store: rp.reads, TokenTTL: cfg.TokenTTL, MaxBody: cfg.MaxBody, KDF: cfg.KDF, Registerer: m.registry,
		OnRevoke: endSessions, Seen: shownSeen{m}, Accounts: accountsOf(db), NameHold: cfg.DeletedNameHold, SignInWindow: cfg.DeleteSignInWindow,
		SignInLeeway: cfg.JWT.Leeway,
		KeepMessages: cfg.KeepDeletedMessages, JWT: jv, Keys: keysOf(db), Files: fc,
		OnMention: m.onMention, RoomMentionLimit: m.roomMentionLimit(clustered, rdb),
	})
	m.keyWatch = svc.StartKeyWatch(cfg.APIKeyWatch)
	m.fileSweep = svc.StartFileSweep(cfg.Files.SweepEvery)
	api, err := m.openAPI(svc, db, rdb, clustered, sendLimit, readLimit)
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
	if err := m.startRetention(db); err != nil {
		return err
	}
	if err := m.startWebhooks(db); err != nil {
		return err
	}
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
	if c.DeleteSignInWindow < 0 {
		return false, nil, nil, fmt.Errorf("--delete-signin-window %v: want a duration above 0, such as 10m (0: the default)", c.DeleteSignInWindow)
	}
	if c.DeletedNameHold < 0 {
		return false, nil, nil, fmt.Errorf("--deleted-name-hold %v: want a duration above 0, such as 720h (0: the default)", c.DeletedNameHold)
	}
	return clustered, sendLimit, readLimit, nil
}

// openAPI returns the REST API over svc with the login limits and the
// send and read limits; in cluster mode (rdb not nil) the limits are
// counted over the cluster (limits.go).
func (m *Main) openAPI(svc *chat.Service, db parley.Store, rdb *goredis.Client, clustered bool, sendLimit, readLimit *ratelimit.Limiter) (*rest.Handler, error) {
	cfg := m.Config
	limits, err := cfg.loginLimits()
	if err != nil {
		return nil, err
	}
	limits.Chat, limits.Registerer, limits.Files = svc, m.registry, svc
	if limits.OIDC, err = m.openOIDC(svc, clustered); err != nil {
		return nil, err
	}
	limits.NoPasswords = cfg.NoPasswordLogin
	if limits.Webhooks, limits.HookFilter, err = cfg.webhookAdmin(db); err != nil {
		return nil, err
	}
	restLimits(&limits, sendLimit, readLimit)
	if keyLimit, err := rateLimit("--apikey-rate", cfg.APIKeyRate); err != nil {
		return nil, err
	} else if keyLimit != nil {
		limits.KeyLimit = keyLimit
	}
	if rdb != nil { // cluster mode: over the cluster (limits.go)
		cfg.clusterLogins(&limits, rdb)
		shareRestLimits(&limits, rdb, cfg.RedisPrefix)
	}
	return rest.New(limits), nil
}

// Addr returns the HTTP address the node listens on.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// chatURL is the address of the chat page at / on the listener addr; an
// unspecified host (":8080", "[::]:8080") is reached at 127.0.0.1.
func chatURL(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr + "/"
	}
	if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
		host = "127.0.0.1"
	}
	return "http://" + net.JoinHostPort(host, port) + "/"
}

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
	if m.jwt != nil { // after the sessions that verify tokens
		m.jwt.Close()
	}
	for _, s := range m.ops {
		if err := s.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	if m.hooks != nil { // before the store: releases its leases
		m.hooks.Close()
	}
	if m.expiry != nil { // before the store: a pass ends between two deletions
		m.expiry.Close()
	}
	m.keyWatch.Close()
	m.fileSweep.Close()
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
