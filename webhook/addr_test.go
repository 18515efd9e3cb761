package webhook_test

import (
	"errors"
	"net/netip"
	"testing"

	"parley/webhook"
)

func TestFilter(t *testing.T) {
	none, err := webhook.NewFilter(nil)
	if err != nil {
		t.Fatal(err)
	}
	some, err := webhook.NewFilter([]string{"10.1.0.0/16", "127.0.0.1", "hooks.internal", "fd00::/8"})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		host, ip        string
		byDefault, some bool
	}{
		{"a", "127.0.0.1", false, true},
		{"a", "127.0.0.2", false, false},
		{"a", "10.0.0.1", false, false},
		{"a", "10.1.2.3", false, true},
		{"a", "172.16.0.1", false, false},
		{"a", "172.31.255.255", false, false},
		{"a", "172.32.0.1", true, true},
		{"a", "192.168.1.1", false, false},
		{"a", "169.254.169.254", false, false}, // cloud metadata
		{"a", "100.64.0.1", false, false},
		{"a", "0.0.0.0", false, false},
		{"a", "224.0.0.1", false, false},
		{"a", "::1", false, false},
		{"a", "fc00::1", false, false},
		{"a", "fd12::1", false, true},
		{"a", "fe80::1", false, false},
		{"a", "::ffff:127.0.0.1", false, true},    // IPv4-mapped: judged as 127.0.0.1
		{"a", "::ffff:192.168.0.1", false, false}, // IPv4-mapped private
		{"a", "::", false, false},
		{"a", "93.184.216.34", true, true},
		{"a", "2606:2800:220:1::1", true, true},
		{"hooks.internal", "192.168.7.7", false, true}, // an allowed name reaches any address
		{"HOOKS.internal", "10.9.9.9", false, true},
	} {
		ip := netip.MustParseAddr(c.ip)
		if got := none.Allowed(c.host, ip); got != c.byDefault {
			t.Errorf("default: Allowed(%s, %s) = %v, want %v", c.host, c.ip, got, c.byDefault)
		}
		if got := some.Allowed(c.host, ip); got != c.some {
			t.Errorf("allow-list: Allowed(%s, %s) = %v, want %v", c.host, c.ip, got, c.some)
		}
	}
	if _, err := webhook.NewFilter([]string{"10.0.0.0/33"}); err == nil {
		t.Error("NewFilter(10.0.0.0/33) = nil error")
	}
}

func TestCheckURL(t *testing.T) {
	f, _ := webhook.NewFilter(nil)
	for _, c := range []struct {
		url     string
		refused bool // a RefusedError, not another error
		ok      bool
	}{
		{"http://127.0.0.1:9/hook", true, false},
		{"http://localhost:9/hook", true, false},
		{"http://[::1]/hook", true, false},
		{"http://[::ffff:10.0.0.1]/hook", true, false},
		{"https://169.254.169.254/latest/meta-data", true, false},
		{"ftp://93.184.216.34/", false, false},
		{"http://user:pw@93.184.216.34/", false, false},
		{"/relative", false, false},
		{"https://93.184.216.34/hook", false, true},
	} {
		err := f.CheckURL(c.url)
		var re *webhook.RefusedError
		if got := errors.As(err, &re); got != c.refused || (err == nil) != c.ok {
			t.Errorf("CheckURL(%q) = %v, want refused %v ok %v", c.url, err, c.refused, c.ok)
		}
	}
}
