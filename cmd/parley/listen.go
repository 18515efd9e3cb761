package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"time"

	"parley/accept"
	"parley/chat"
	"parley/web"

	"github.com/prometheus/client_golang/prometheus/promhttp"
)

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
