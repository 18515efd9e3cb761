package gateway

import (
	"encoding/json"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"parley"

	"github.com/gobwas/ws"
)

// The WebSocket subprotocols of STOMP, the server's preference first.
var subprotocols = []string{"v12.stomp", "v11.stomp", "v10.stomp"}

func (srv *Server) serveWebSocket(w http.ResponseWriter, r *http.Request) {
	if !srv.originAllowed(r) {
		srv.m.refusals[refusalIndex("forbidden")].Inc()
		http.Error(w, "origin not allowed", http.StatusForbidden)
		return
	}
	srv.mu.Lock()
	down := srv.shutdown
	srv.mu.Unlock()
	if down {
		http.Error(w, "shutting down", http.StatusServiceUnavailable)
		return
	}
	if srv.full() {
		srv.m.connRefusals[refusedNodeLimit].Inc()
		w.Header().Set("Retry-After", "5")
		writeJSONError(w, http.StatusServiceUnavailable, errNodeFull)
		return
	}
	u := ws.HTTPUpgrader{
		Timeout: 10 * time.Second,
		Protocol: func(p string) bool {
			for _, sp := range subprotocols {
				if p == sp {
					return true
				}
			}
			return false
		},
		// No Negotiate: permessage-deflate and every other extension are
		// declined.
	}
	conn, rw, _, err := u.Upgrade(r, w)
	if err != nil {
		if conn != nil {
			conn.Close()
		}
		return
	}
	if nc, ok := conn.(interface{ NetConn() net.Conn }); ok {
		// The socket itself, under a wrapper of the HTTP server's
		// (accept.Sweeper, which gave it exact deadlines at the
		// hijack): the session polls its descriptor and writes to it.
		conn = nc.NetConn()
	}
	var prefix []byte
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n)
		prefix = append([]byte(nil), b...)
	}
	srv.start(conn, true, prefix)
}

// originAllowed applies the Origin policy: no Origin header (not a
// browser) is allowed; otherwise the origin must be listed in
// AllowedOrigins (scheme, host and port), or, when that is empty, be the
// request's own: the same host and port, and the scheme the request came
// in with (https over TLS, else http). Behind a proxy that ends TLS, the
// page's https origin must be listed.
func (srv *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if len(srv.cfg.AllowedOrigins) == 0 {
		scheme := "http"
		if r.TLS != nil {
			scheme = "https"
		}
		u, err := url.Parse(origin)
		return err == nil && strings.EqualFold(u.Scheme, scheme) && strings.EqualFold(u.Host, r.Host)
	}
	for _, o := range srv.cfg.AllowedOrigins {
		if o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	return false
}

// full reports whether the node has MaxConns sessions (see Server.add).
func (srv *Server) full() bool {
	srv.mu.Lock()
	defer srv.mu.Unlock()
	return len(srv.sessions)-srv.overCap >= srv.cfg.MaxConns
}

// writeJSONError answers an HTTP request the way the REST API does:
// {"error":{"code","message"}}.
func writeJSONError(w http.ResponseWriter, status int, err error) {
	var body struct {
		Error struct {
			Code    string `json:"code"`
			Message string `json:"message"`
		} `json:"error"`
	}
	body.Error.Code, body.Error.Message = parley.ErrorCode(err), parley.ErrorMessage(err)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}
