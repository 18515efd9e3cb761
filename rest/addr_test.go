package rest

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientAddr(t *testing.T) {
	for _, tt := range []struct {
		name    string
		trusted string
		peer    string
		xff     []string // X-Forwarded-For lines
		want    string
	}{
		{"no proxies: the peer", "", "203.0.113.7:5000", nil, "203.0.113.7"},
		{"no proxies: a header is ignored", "", "203.0.113.7:5000", []string{"198.51.100.1"}, "203.0.113.7"},
		{"spoofed header from an untrusted peer", "10.0.0.0/8", "203.0.113.7:5000", []string{"10.0.0.5, 198.51.100.1"}, "203.0.113.7"},
		{"trusted proxy: the address it heard from", "10.0.0.0/8", "10.0.0.2:443", []string{"198.51.100.1"}, "198.51.100.1"},
		{"trusted proxy by address", "10.0.0.2", "10.0.0.2:443", []string{"198.51.100.1"}, "198.51.100.1"},
		{"client-written entries left of the client are ignored", "10.0.0.0/8", "10.0.0.2:443", []string{"1.1.1.1, 198.51.100.1"}, "198.51.100.1"},
		{"a chain of trusted proxies", "10.0.0.0/8, 192.168.0.0/16", "10.0.0.2:443", []string{"6.6.6.6, 198.51.100.1, 192.168.1.1, 10.0.0.9"}, "198.51.100.1"},
		{"several header lines read as one list", "10.0.0.0/8", "10.0.0.2:443", []string{"6.6.6.6, 198.51.100.1", "10.0.0.3"}, "198.51.100.1"},
		{"trusted proxy without a header", "10.0.0.0/8", "10.0.0.2:443", nil, "10.0.0.2"},
		{"every hop trusted: the left-most", "10.0.0.0/8", "10.0.0.2:443", []string{"10.0.0.4, 10.0.0.3"}, "10.0.0.4"},
		{"garbage ends the walk at the proxy that passed it on", "10.0.0.0/8", "10.0.0.2:443", []string{"198.51.100.1, nonsense, 10.0.0.3"}, "10.0.0.3"},
		{"an empty entry ends the walk", "10.0.0.0/8", "10.0.0.2:443", []string{""}, "10.0.0.2"},
		{"an entry with a port", "10.0.0.0/8", "10.0.0.2:443", []string{"198.51.100.1:6000"}, "198.51.100.1"},
		{"IPv6 peer and entry", "fd00::/8", "[fd00::1]:443", []string{"2001:db8::5"}, "2001:db8::5"},
		{"IPv4-mapped peer matches an IPv4 proxy", "10.0.0.0/8", "[::ffff:10.0.0.2]:443", []string{"198.51.100.1"}, "198.51.100.1"},
		{"IPv4-mapped entry is the IPv4 address", "10.0.0.0/8", "10.0.0.2:443", []string{"::ffff:198.51.100.1"}, "198.51.100.1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			trusted, err := ParseTrustedProxies(tt.trusted)
			if err != nil {
				t.Fatalf("ParseTrustedProxies(%q) error = %v", tt.trusted, err)
			}
			h := &Handler{trusted: trusted}
			r := httptest.NewRequest("GET", "/", nil)
			r.RemoteAddr = tt.peer
			for _, v := range tt.xff {
				r.Header.Add("X-Forwarded-For", v)
			}
			if got := h.clientAddr(r); got != netip.MustParseAddr(tt.want) {
				t.Errorf("clientAddr(peer %s, X-Forwarded-For %q, trusted %q) = %v, want %s", tt.peer, tt.xff, tt.trusted, got, tt.want)
			}
		})
	}
}

func TestParseTrustedProxies(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want string // the prefixes, space-separated; "error" for a refusal
	}{
		{"", ""},
		{" , ", ""},
		{"10.0.0.1", "10.0.0.1/32"},
		{"10.1.2.3/8, ::1", "10.0.0.0/8 ::1/128"},
		{"::ffff:10.0.0.1", "10.0.0.1/32"},
		{"10.0.0.0/33", "error"},
		{"example.com", "error"},
	} {
		got, err := ParseTrustedProxies(tt.in)
		s := ""
		for i, p := range got {
			if i > 0 {
				s += " "
			}
			s += p.String()
		}
		if err != nil {
			s = "error"
		}
		if s != tt.want {
			t.Errorf("ParseTrustedProxies(%q) = %q (%v), want %q", tt.in, s, err, tt.want)
		}
	}
}

func TestAddrKey(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"203.0.113.7", "203.0.113.7"},
		{"2001:db8:1:2:3:4:5:6", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff::1", "2001:db8:1:2::/64"},
	} {
		if got := addrKey(netip.MustParseAddr(tt.in)); got != tt.want {
			t.Errorf("addrKey(%s) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := addrKey(netip.Addr{}); got != "unknown" {
		t.Errorf("addrKey(zero) = %q, want unknown", got)
	}
}
