package webhook_test

import (
	"net/netip"
	"testing"

	"parley/webhook"
)

// Probe: IPv6 forms that embed an IPv4 address and reach it through a
// translator (NAT64 64:ff9b::/96 and 64:ff9b:1::/48, RFC 6052/8215;
// 6to4 2002::/16; IPv4-compatible ::/96; IPv4-translated ::ffff:0:0/96;
// Teredo 2001::/32) are judged as public addresses. On an IPv6-only
// host with NAT64 (an AWS IPv6-only subnet's NAT gateway, DNS64
// networks) 64:ff9b::a9fe:a9fe or 64:ff9b::10.0.0.5 reaches the cloud
// metadata service or a private IPv4 host, which the filter promises to
// refuse. The default filter should refuse these as it refuses
// ::ffff:a.b.c.d (judged as the embedded IPv4 address, or refused
// outright).
func TestProbeFilterIPv4EmbeddingIPv6(t *testing.T) {
	none, err := webhook.NewFilter(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []string{
		"64:ff9b::7f00:1",                      // NAT64 well-known prefix, 127.0.0.1
		"64:ff9b::a9fe:a9fe",                   // NAT64, 169.254.169.254 (cloud metadata)
		"64:ff9b::a00:5",                       // NAT64, 10.0.0.5
		"64:ff9b:1::a00:5",                     // NAT64 local-use prefix (RFC 8215)
		"2002:a9fe:a9fe::1",                    // 6to4 of 169.254.169.254
		"2002:7f00:1::1",                       // 6to4 of 127.0.0.1
		"::7f00:1",                             // IPv4-compatible 127.0.0.1
		"::a9fe:a9fe",                          // IPv4-compatible 169.254.169.254
		"::ffff:0:7f00:1",                      // IPv4-translated (RFC 2765) 127.0.0.1
		"2001:0:4136:e378:8000:63bf:80ff:fffe", // Teredo, client 127.0.0.1 (obfuscated)
	} {
		if none.Allowed("a", netip.MustParseAddr(c)) {
			t.Errorf("default filter: Allowed(a, %s) = true, want false (embeds an internal IPv4 address)", c)
		}
		if err := none.CheckURL("http://[" + c + "]:8080/hook"); err == nil {
			t.Errorf("CheckURL(http://[%s]:8080/hook) = nil, want refused", c)
		}
	}
}
