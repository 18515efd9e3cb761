package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"parley/accept"

	"github.com/prometheus/client_golang/prometheus"
)

// opsServer serves operators' endpoints (/metrics, /debug/pprof/) on a
// listener of their own, apart from the public address.
type opsServer struct {
	srv     *http.Server
	ln      net.Listener
	metrics bool       // it serves /metrics
	done    chan error // Serve's result, once it returns
}

// serveOps starts the operators' servers that cfg asks for: /metrics on
// --metrics-addr and pprof on --debug-addr, one server when the two are
// the same address. It returns none when neither is set.
func serveOps(cfg Config, metrics http.Handler, reg prometheus.Registerer) ([]*opsServer, error) {
	type plan struct {
		addr, name string
		mux        *http.ServeMux
		metrics    bool
	}
	var plans []*plan
	at := func(addr, name string) *plan {
		for _, p := range plans {
			if p.addr == addr {
				return p
			}
		}
		p := &plan{addr: addr, name: name, mux: http.NewServeMux()}
		plans = append(plans, p)
		return p
	}
	if cfg.MetricsAddr != "" {
		p := at(cfg.MetricsAddr, "metrics")
		p.mux.Handle("GET /metrics", metrics)
		p.metrics = true
	}
	if cfg.DebugAddr != "" {
		debugRoutes(at(cfg.DebugAddr, "debug").mux)
	}
	var servers []*opsServer
	for _, p := range plans {
		ln, err := net.Listen("tcp", p.addr)
		if err != nil {
			for _, s := range servers {
				s.Close()
			}
			return nil, fmt.Errorf("listen %s: %w", p.name, err)
		}
		s := &opsServer{
			// No write timeout: a CPU profile or a trace streams for as
			// long as it was asked to.
			srv:     &http.Server{Handler: p.mux, ReadHeaderTimeout: 10 * time.Second, ReadTimeout: 10 * time.Second},
			ln:      ln,
			metrics: p.metrics,
			done:    make(chan error, 1),
		}
		al := accept.New(ln, accept.Config{Name: p.name, Registerer: reg})
		go func() { s.done <- s.srv.Serve(al) }()
		servers = append(servers, s)
		slog.Info("operator endpoints serving", "addr", s.Addr(), "metrics", p.metrics, "pprof", p.addr == cfg.DebugAddr)
	}
	return servers, nil
}

// Addr returns the address the server listens on.
func (s *opsServer) Addr() string { return s.ln.Addr().String() }

// Close stops the server at once, requests in flight included, and waits
// for it.
func (s *opsServer) Close() error {
	s.srv.Close()
	if err := <-s.done; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("operator server %s: %w", s.Addr(), err)
	}
	return nil
}
