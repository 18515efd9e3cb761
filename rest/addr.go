package rest

import (
	"fmt"
	"net/http"
	"net/netip"
	"strings"
)

// ParseTrustedProxies parses a comma-separated list of IP addresses and
// CIDR prefixes (the --trusted-proxies flag). Empty entries are skipped.
func ParseTrustedProxies(list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		if strings.Contains(s, "/") {
			p, err := netip.ParsePrefix(s)
			if err != nil {
				return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
			}
			out = append(out, p.Masked())
			continue
		}
		a, err := netip.ParseAddr(s)
		if err != nil {
			return nil, fmt.Errorf("trusted proxy %q: %w", s, err)
		}
		a = a.Unmap()
		out = append(out, netip.PrefixFrom(a, a.BitLen()))
	}
	return out, nil
}

// clientAddr returns the address a request came from. It is the socket
// peer, unless the peer is a trusted proxy: then X-Forwarded-For is read
// from the right (each proxy appends the address it heard from) and the
// first address that is not a trusted proxy is the client. Addresses to
// the left of it were written by whoever the client is, so they are never
// believed. An entry that is not an address ends the walk at the proxy
// that passed it on. The zero Addr means the peer could not be parsed.
func (h *Handler) clientAddr(r *http.Request) netip.Addr {
	addr := peerAddr(r.RemoteAddr)
	if !h.isTrusted(addr) {
		return addr
	}
	hops := strings.Split(strings.Join(r.Header.Values("X-Forwarded-For"), ","), ",")
	for i := len(hops) - 1; i >= 0 && h.isTrusted(addr); i-- {
		a, ok := parseHop(hops[i])
		if !ok {
			break
		}
		addr = a
	}
	return addr
}

func (h *Handler) isTrusted(a netip.Addr) bool {
	for _, p := range h.trusted {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// peerAddr parses http.Request.RemoteAddr, "host:port".
func peerAddr(remote string) netip.Addr {
	if ap, err := netip.ParseAddrPort(remote); err == nil {
		return ap.Addr().Unmap().WithZone("")
	}
	a, _ := netip.ParseAddr(remote) // no port: not from net/http, but take it
	return a.Unmap().WithZone("")
}

// parseHop parses one X-Forwarded-For entry: an address, with a port or
// not (some proxies add it).
func parseHop(s string) (netip.Addr, bool) {
	s = strings.TrimSpace(s)
	if a, err := netip.ParseAddr(s); err == nil {
		return a.Unmap().WithZone(""), true
	}
	if ap, err := netip.ParseAddrPort(s); err == nil {
		return ap.Addr().Unmap().WithZone(""), true
	}
	return netip.Addr{}, false
}

// addrKey is the key of a client address in the per-address limits: an
// IPv4 address, or the /64 of an IPv6 one (the smallest network one
// subscriber gets, so that one host cannot take a fresh key per address).
func addrKey(a netip.Addr) string {
	switch {
	case !a.IsValid():
		return "unknown"
	case a.Is6():
		p, _ := a.Prefix(64)
		return p.String()
	}
	return a.String()
}
