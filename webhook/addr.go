package webhook

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// Filter decides which addresses a webhook may reach. By default every
// public unicast address is allowed and these are refused: loopback
// (127.0.0.0/8, ::1), private (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16,
// fc00::/7), shared (100.64.0.0/10), link-local (169.254.0.0/16,
// fe80::/10, cloud metadata services among them), unspecified, multicast
// and broadcast; an IPv4-mapped IPv6 address is judged as its IPv4
// address. Allow lists the exceptions: CIDRs, single addresses, or host
// names, whose every address is then allowed.
//
// The check runs on the address a connection is about to be made to
// (Control, the dialer's hook), after the name was resolved, so a name
// that resolves to a public address when the webhook is added and to
// 127.0.0.1 later (DNS rebinding) is refused all the same.
type Filter struct {
	prefixes []netip.Prefix
	hosts    map[string]bool
}

// NewFilter parses allow: each a CIDR ("10.1.0.0/16"), an address
// ("127.0.0.1") or a host name ("hooks.internal").
func NewFilter(allow []string) (*Filter, error) {
	f := &Filter{hosts: map[string]bool{}}
	for _, a := range allow {
		a = strings.TrimSpace(a)
		switch {
		case a == "":
		case strings.Contains(a, "/"):
			p, err := netip.ParsePrefix(a)
			if err != nil {
				return nil, fmt.Errorf("webhook allow-list: %q: %w", a, err)
			}
			f.prefixes = append(f.prefixes, p.Masked())
		default:
			if ip, err := netip.ParseAddr(a); err == nil {
				ip = ip.Unmap()
				f.prefixes = append(f.prefixes, netip.PrefixFrom(ip, ip.BitLen()))
			} else {
				f.hosts[strings.ToLower(a)] = true
			}
		}
	}
	return f, nil
}

var sharedSpace = netip.MustParsePrefix("100.64.0.0/10")

// embedding are the IPv6 ranges whose addresses carry an IPv4 address that
// a translator or tunnel may deliver to (so 64:ff9b::a9fe:a9fe may reach
// 169.254.169.254 behind NAT64): NAT64's well-known and local-use
// prefixes, 6to4, Teredo, IPv4-compatible and IPv4-translated addresses.
// They are refused whatever the IPv4 inside; --webhook-allow may allow one.
var embedding = []netip.Prefix{
	netip.MustParsePrefix("64:ff9b::/96"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("2002::/16"),
	netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("::/96"),
	netip.MustParsePrefix("::ffff:0:0:0/96"),
}

// internal reports whether ip is of a range a webhook may not reach by
// default.
func internal(ip netip.Addr) bool {
	ip = ip.Unmap()
	return !ip.IsValid() || ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() ||
		ip.IsInterfaceLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || sharedSpace.Contains(ip) ||
		ip == netip.AddrFrom4([4]byte{255, 255, 255, 255}) || embeds(ip)
}

// embeds reports whether ip is of a range of embedding.
func embeds(ip netip.Addr) bool {
	for _, p := range embedding {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// Allowed reports whether a webhook whose URL names host may connect to
// ip.
func (f *Filter) Allowed(host string, ip netip.Addr) bool {
	ip = ip.Unmap()
	if !internal(ip) || f.hosts[strings.ToLower(host)] {
		return true
	}
	for _, p := range f.prefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// RefusedError is a connection the filter refused.
type RefusedError struct {
	Host string
	IP   netip.Addr
}

func (e *RefusedError) Error() string {
	return fmt.Sprintf("webhook: %s resolves to %s, a loopback, private, link-local or other internal address (allow it with --webhook-allow)", e.Host, e.IP)
}

// Control returns a net.Dialer Control hook for a webhook whose URL names
// host: it refuses each connection to an address Allowed refuses.
func (f *Filter) Control(host string) func(network, address string, c syscall.RawConn) error {
	return func(network, address string, _ syscall.RawConn) error {
		ap, err := netip.ParseAddrPort(address)
		if err != nil {
			return fmt.Errorf("webhook: dial %s: %w", address, err)
		}
		if !f.Allowed(host, ap.Addr()) {
			return &RefusedError{Host: host, IP: ap.Addr().Unmap()}
		}
		return nil
	}
}

// CheckURL refuses, with an error that says why, a webhook URL that is
// not http or https with a host, that carries credentials, or whose host
// is an address Allowed refuses. A host name is checked again at each
// connection (Control).
func (f *Filter) CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("webhook URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("webhook URL %q: want http:// or https:// and a host", raw)
	}
	if u.User != nil {
		return fmt.Errorf("webhook URL %q: credentials in the URL are refused (the signature authenticates the sender)", raw)
	}
	host := u.Hostname()
	if ip, err := netip.ParseAddr(host); err == nil && !f.Allowed(host, ip) {
		return &RefusedError{Host: host, IP: ip.Unmap()}
	}
	if ips, err := net.LookupIP(host); err == nil {
		for _, ip := range ips {
			if a, ok := netip.AddrFromSlice(ip); ok && !f.Allowed(host, a) {
				return &RefusedError{Host: host, IP: a.Unmap()}
			}
		}
	}
	return nil
}
