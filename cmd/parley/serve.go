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
	"time"

	"parley"
	"parley/cache"
	"parley/chat"
	"parley/gateway"
	"parley/history"
	"parley/hub"
	"parley/postgres"
	"parley/ratelimit"
	"parley/rest"
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
	Addr     string        // HTTP listen address
	Data     string        // data directory of the embedded store
	Sync     string        // SQLite synchronous setting: full, normal, off
	TokenTTL time.Duration // access token lifetime
	MaxBody  int           // largest message body, bytes
	LogLevel slog.Level

	StompAddr      string        // raw TCP STOMP listen address; "" for none
	DebugAddr      string        // pprof listen address; "" for none
	CacheRecent    int           // newest messages of each room kept in memory
	CacheHistory   int           // MiB of older messages kept in memory, over all rooms; 0: none
	AllowedOrigins string        // comma-separated Origins allowed on /ws; "" for the same host
	StompHeartBeat time.Duration // heart-beat interval offered both ways
	StompSendRate  float64       // SEND frames per second per user
	StompQueue     int           // outbound queue bound per connection, frames
	RestSendRate   float64       // REST messages and new rooms per second per user; 0: no limit

	// STOMP limits a client cannot stretch (issue 10).
	StompFrameTimeout time.Duration // most time one frame may take to arrive
	StompMaxHeartBeat time.Duration // cap on either interval of a client's heart-beat
	StompMaxUserConns int           // STOMP connections per user on this node
	StompMaxConns     int           // STOMP connections on this node
	StompSendBuffer   int           // kernel send buffer of each STOMP socket, bytes; -1: the system's

	// Cluster mode: all three of Store (postgres://…), Broker and Redis.
	Store       string        // "" for the embedded SQLite store, or a postgres:// URL
	Broker      string        // amqp:// URL of RabbitMQ
	Redis       string        // redis:// URL for presence
	NodeID      string        // this node's id; "" for host name and port
	Prefetch    int           // RabbitMQ consumer prefetch
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
	fs.TextVar(&c.LogLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn, error")
	fs.StringVar(&c.StompAddr, "stomp-addr", "", "raw TCP STOMP listen address (empty: WebSocket /ws only)")
	fs.IntVar(&c.CacheRecent, "cache-recent", cache.DefaultRecentMessages, "newest messages of each room served from memory (older history pages read the store)")
	fs.IntVar(&c.CacheHistory, "cache-history-mib", history.DefaultMaxBytes>>20, "MiB of older messages kept in memory, over all rooms, in blocks of 100 read once (0: older pages always read the store)")
	fs.StringVar(&c.DebugAddr, "debug-addr", "", "serve Go's pprof profiles at http://ADDR/debug/pprof/ (keep it on loopback; empty: off)")
	fs.StringVar(&c.AllowedOrigins, "allowed-origins", "", "comma-separated Origins allowed to open /ws, or * (empty: the same host)")
	fs.DurationVar(&c.StompHeartBeat, "stomp-heartbeat", 10*time.Second, "STOMP heart-beat interval the server offers both ways")
	fs.Float64Var(&c.StompSendRate, "stomp-send-rate", 20, "SEND frames per second a user may sustain over all of the user's STOMP connections to this node (bursts of twice that)")
	fs.Float64Var(&c.RestSendRate, "rest-send-rate", 20, "messages plus new rooms per second a user may sustain over the HTTP API (bursts of twice that), else 429 with Retry-After; counted per node; 0: no limit")
	fs.IntVar(&c.StompQueue, "stomp-queue", 1024, "outbound frames queued per STOMP connection before it is closed as a slow consumer")
	fs.DurationVar(&c.StompFrameTimeout, "stomp-frame-timeout", 30*time.Second, "most time a STOMP frame may take from its first octet to its end, whatever the client's heart-beat, else ERROR")
	fs.IntVar(&c.StompMaxUserConns, "stomp-max-conns-per-user", 32, "STOMP connections one user may hold open on this node; the next CONNECT gets ERROR rate_limited")
	fs.IntVar(&c.StompMaxConns, "stomp-max-conns", 10000, "STOMP connections this node holds, signed in or not; over it /ws answers 503 and raw TCP gets ERROR unavailable")
	fs.IntVar(&c.StompSendBuffer, "stomp-send-buffer", 64<<10, "kernel send buffer (SO_SNDBUF) of each STOMP connection in bytes, so that a client that stops reading is found by --stomp-queue (-1: the system's autotuned buffer)")
	fs.DurationVar(&c.StompMaxHeartBeat, "stomp-max-heartbeat", time.Minute, "largest heart-beat interval accepted from a STOMP client, either way (a larger one is taken as this)")
	fs.StringVar(&c.Store, "store", "", "store: empty for SQLite in --data, or postgres://user@host:port/db (cluster mode)")
	fs.StringVar(&c.Broker, "broker", "", "cluster mode: RabbitMQ URL, amqp://user:pass@host:port/vhost")
	fs.StringVar(&c.Redis, "redis", "", "cluster mode: Redis URL for presence, redis://host:port/db")
	fs.StringVar(&c.NodeID, "node-id", "", "cluster mode: this node's id (default: host name and port)")
	fs.IntVar(&c.Prefetch, "prefetch", 256, "cluster mode: RabbitMQ consumer prefetch")
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
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return err
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel})))

	m := &Main{Config: cfg}
	if err := m.Open(ctx); err != nil {
		m.Close(context.Background())
		return err
	}
	slog.Info("parley serving", "addr", m.Addr(), "data", cfg.Data, "version", versionString())
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
	store    parley.Store
	http     *http.Server
	debug    *http.Server // pprof, when --debug-addr is set
	hub      *hub.Hub
	gateway  *gateway.Server
	stompLn  net.Listener
	ln       net.Listener
	served   chan error
	cluster  *clusterNode // nil in single-node mode
}

// Open opens the stores and starts listening. It returns once the node
// accepts connections.
func (m *Main) Open(ctx context.Context) error {
	cfg := m.Config
	m.registry = prometheus.NewRegistry()
	m.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	clustered, err := cfg.clustered()
	if err != nil {
		return err
	}
	var sendLimit *ratelimit.Limiter
	switch r := cfg.RestSendRate; {
	case r > 0 && !math.IsInf(r, 1):
		sendLimit = ratelimit.New(ratelimit.Config{Rate: r}) // Burst: twice the rate
	case r != 0:
		return fmt.Errorf("--rest-send-rate %g: want a positive rate, or 0 for no limit", r)
	}
	// The store reports each commit, in order, to the sinks; they are all
	// installed before the first write, which only the listeners can cause.
	var sinks []parley.EventSink
	onCommit := func(evs []parley.Event) {
		for _, s := range sinks {
			s(evs)
		}
	}
	var db parley.Store
	switch {
	case isPostgres(cfg.Store):
		if db, err = postgres.Open(ctx, postgres.Config{URL: cfg.Store, OnCommit: onCommit, Registerer: m.registry}); err != nil {
			return fmt.Errorf("open store: %w", err)
		}
	case cfg.Store == "":
		if err := os.MkdirAll(cfg.Data, 0o750); err != nil {
			return fmt.Errorf("data directory: %w", err)
		}
		sync, err := sqlite.ParseSync(cfg.Sync)
		if err != nil {
			return err
		}
		if db, err = sqlite.Open(ctx, sqlite.Config{
			Path: filepath.Join(cfg.Data, "parley.db"), Sync: sync, OnCommit: onCommit, Registerer: m.registry,
		}); err != nil {
			return fmt.Errorf("open store: %w", err)
		}
	default:
		return fmt.Errorf("--store %q: want empty (SQLite) or postgres://…", cfg.Store)
	}
	m.store = db
	hot := db
	var rdb *goredis.Client // cluster mode's Redis, owned by m.cluster once it opens
	if clustered {
		// Every node keeps the shared hot data in Redis current with its
		// own commits, and reads what all the nodes wrote.
		if rdb, err = dialRedis(ctx, cfg); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		h := openHot(cfg, db, rdb, m.registry)
		sinks = append(sinks, h.Apply)
		hot, m.store = h, h
	} else {
		// The in-memory cache is kept current by this node's commits only,
		// so it fronts the store only when no other node writes to it.
		c := cache.New(db, cache.Config{RecentMessages: cfg.CacheRecent, Registerer: m.registry})
		sinks = append(sinks, c.Apply)
		hot, m.store = c, c
	}

	if cfg.CacheHistory > 0 {
		// Older pages never change: every node keeps its own copy.
		hot = history.New(hot, history.Config{MaxBytes: cfg.CacheHistory << 20, Registerer: m.registry})
	}
	svc := chat.New(chat.Config{
		Store: hot, TokenTTL: cfg.TokenTTL, MaxBody: cfg.MaxBody, KDF: cfg.KDF, Registerer: m.registry,
	})
	api := rest.New(rest.Config{Chat: svc, SendLimit: sendLimit, Registerer: m.registry})
	m.hub = hub.New(hub.Config{Members: hot, Registerer: m.registry})
	var sessions gateway.Sessions
	if clustered {
		if m.cluster, err = openCluster(cfg, rdb, hot, m.hub, m.registry); err != nil {
			return fmt.Errorf("cluster: %w", err)
		}
		sinks = append(sinks, m.cluster.relay.Apply)
		sessions = m.cluster
	} else {
		sinks = append(sinks, m.hub.Apply)
	}
	var origins []string
	for _, o := range strings.Split(cfg.AllowedOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			origins = append(origins, o)
		}
	}
	m.gateway, err = gateway.New(gateway.Config{
		Chat: svc, Hub: m.hub, AllowedOrigins: origins,
		HeartBeat: stomp.HeartBeat{Send: cfg.StompHeartBeat, Receive: cfg.StompHeartBeat},
		SendRate:  cfg.StompSendRate, SendBurst: int(2 * cfg.StompSendRate), QueueFrames: cfg.StompQueue,
		FrameTimeout: cfg.StompFrameTimeout, MaxHeartBeat: cfg.StompMaxHeartBeat,
		MaxConnsPerUser: cfg.StompMaxUserConns, MaxConns: cfg.StompMaxConns, SendBuffer: cfg.StompSendBuffer,
		Server: "parley/" + version, Registerer: m.registry, Sessions: sessions,
	})
	if err != nil {
		return fmt.Errorf("stomp gateway: %w", err)
	}

	mux := http.NewServeMux()
	mux.Handle("/api/", api)
	mux.Handle("GET /ws", m.gateway)
	mux.Handle("/", web.Handler()) // the browser client; no method in the pattern, which "/api/" would conflict with
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.registry, promhttp.HandlerOpts{Registry: m.registry}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.Handle("GET /readyz", readyHandler(readyTimeout, m.readyChecks(svc)))

	m.ln, err = net.Listen("tcp", cfg.Addr)
	if err != nil {
		return fmt.Errorf("listen: %w", err)
	}
	m.http = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		ErrorLog:          slog.NewLogLogger(slog.Default().Handler(), slog.LevelWarn),
	}
	if cfg.StompAddr != "" {
		if m.stompLn, err = net.Listen("tcp", cfg.StompAddr); err != nil {
			return fmt.Errorf("listen stomp: %w", err)
		}
		go m.gateway.Serve(m.stompLn)
	}
	if cfg.DebugAddr != "" {
		if m.debug, err = serveDebug(cfg.DebugAddr); err != nil {
			return err
		}
	}
	m.served = make(chan error, 1)
	go func() { m.served <- m.http.Serve(m.ln) }()
	return nil
}

// Addr returns the HTTP address the node listens on.
func (m *Main) Addr() string { return m.ln.Addr().String() }

// StompAddr returns the raw TCP STOMP address, "" when not listening.
func (m *Main) StompAddr() string {
	if m.stompLn == nil {
		return ""
	}
	return m.stompLn.Addr().String()
}

// Close stops accepting, lets in-flight requests finish until ctx ends,
// then closes the store after its pending writes.
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
	if err := <-gatewayDone; err != nil {
		errs = append(errs, fmt.Errorf("stomp shutdown: %w", err))
	}
	if m.debug != nil {
		m.debug.Close()
	}
	if m.store != nil {
		if err := m.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
	}
	if m.cluster != nil {
		if err := m.cluster.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close cluster: %w", err))
		}
	}
	if m.hub != nil {
		m.hub.Close()
	}
	return errors.Join(errs...)
}
