package gateway

import (
	"net/http"
	"net/url"
	"strings"
	"time"

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
	var prefix []byte
	if n := rw.Reader.Buffered(); n > 0 {
		b, _ := rw.Reader.Peek(n)
		prefix = append([]byte(nil), b...)
	}
	srv.start(conn, true, prefix)
}

// originAllowed applies the Origin policy: no Origin header (not a
// browser) is allowed; otherwise the origin must be listed in
// AllowedOrigins, or, when that is empty, be on the request's own host.
func (srv *Server) originAllowed(r *http.Request) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	if len(srv.cfg.AllowedOrigins) == 0 {
		u, err := url.Parse(origin)
		return err == nil && strings.EqualFold(u.Host, r.Host)
	}
	for _, o := range srv.cfg.AllowedOrigins {
		if o == "*" || strings.EqualFold(strings.TrimSuffix(o, "/"), origin) {
			return true
		}
	}
	return false
}
