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
	"path/filepath"
	"strings"
	"time"

	"parley"
	"parley/cache"
	"parley/chat"
	"parley/gateway"
	"parley/hub"
	"parley/rest"
	"parley/sqlite"
	"parley/stomp"
	"parley/web"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
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
	AllowedOrigins string        // comma-separated Origins allowed on /ws; "" for the same host
	StompHeartBeat time.Duration // heart-beat interval offered both ways
	StompSendRate  float64       // SEND frames per second per connection
	StompQueue     int           // outbound queue bound per connection, frames

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
	fs.StringVar(&c.AllowedOrigins, "allowed-origins", "", "comma-separated Origins allowed to open /ws, or * (empty: the same host)")
	fs.DurationVar(&c.StompHeartBeat, "stomp-heartbeat", 10*time.Second, "STOMP heart-beat interval the server offers both ways")
	fs.Float64Var(&c.StompSendRate, "stomp-send-rate", 20, "SEND frames per second a STOMP connection may sustain (bursts of twice that)")
	fs.IntVar(&c.StompQueue, "stomp-queue", 1024, "outbound frames queued per STOMP connection before it is closed as a slow consumer")
}

func runServe(ctx context.Context, args []string, stderr io.Writer) error {
	var cfg Config
	fs := flag.NewFlagSet("parley serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	cfg.flags(fs)
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return err
	}
	slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel})))

	m := &Main{Config: cfg}
	if err := m.Open(ctx); err != nil {
		m.Close(context.Background())
		return err
	}
	slog.Info("parley serving", "addr", m.Addr(), "data", cfg.Data, "version", version)
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
	hub      *hub.Hub
	gateway  *gateway.Server
	stompLn  net.Listener
	ln       net.Listener
	served   chan error
}

// Open opens the stores and starts listening. It returns once the node
// accepts connections.
func (m *Main) Open(ctx context.Context) error {
	cfg := m.Config
	m.registry = prometheus.NewRegistry()
	m.registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	if err := os.MkdirAll(cfg.Data, 0o750); err != nil {
		return fmt.Errorf("data directory: %w", err)
	}
	// The store reports each commit, in order, to the sinks; they are all
	// installed before the first write, which only the listeners can cause.
	sync, err := sqlite.ParseSync(cfg.Sync)
	if err != nil {
		return err
	}
	var sinks []parley.EventSink
	db, err := sqlite.Open(ctx, sqlite.Config{
		Path: filepath.Join(cfg.Data, "parley.db"),
		Sync: sync,
		OnCommit: func(evs []parley.Event) {
			for _, s := range sinks {
				s(evs)
			}
		},
		Registerer: m.registry,
	})
	if err != nil {
		return fmt.Errorf("open store: %w", err)
	}
	hot := cache.New(db, cache.Config{Registerer: m.registry})
	sinks = append(sinks, hot.Apply)
	m.store = hot

	svc := chat.New(chat.Config{
		Store: hot, TokenTTL: cfg.TokenTTL, MaxBody: cfg.MaxBody, KDF: cfg.KDF, Registerer: m.registry,
	})
	api := rest.New(rest.Config{Chat: svc, Registerer: m.registry})
	m.hub = hub.New(hub.Config{Members: hot, Registerer: m.registry})
	sinks = append(sinks, m.hub.Apply)
	var origins []string
	if cfg.AllowedOrigins != "" {
		origins = strings.Split(cfg.AllowedOrigins, ",")
	}
	m.gateway, err = gateway.New(gateway.Config{
		Chat: svc, Hub: m.hub, AllowedOrigins: origins,
		HeartBeat: stomp.HeartBeat{Send: cfg.StompHeartBeat, Receive: cfg.StompHeartBeat},
		SendRate:  cfg.StompSendRate, SendBurst: int(2 * cfg.StompSendRate), QueueFrames: cfg.StompQueue,
		Server: "parley/" + version, Registerer: m.registry,
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
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := svc.Ping(ctx); err != nil {
			http.Error(w, "store: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("store: ok\n"))
	})

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
	if m.gateway != nil {
		if err := m.gateway.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("stomp shutdown: %w", err))
		}
	}
	if m.http != nil {
		if err := m.http.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("http shutdown: %w", err))
		}
		if err := <-m.served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			errs = append(errs, err)
		}
	}
	if m.store != nil {
		if err := m.store.Close(); err != nil {
			errs = append(errs, fmt.Errorf("close store: %w", err))
		}
	}
	if m.hub != nil {
		m.hub.Close()
	}
	return errors.Join(errs...)
}
