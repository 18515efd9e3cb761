package inmem_test

import (
	"testing"
	"time"

	"parley"
	"parley/inmem"
	"parley/parleytest"
)

func TestBroker(t *testing.T) {
	parleytest.RunBrokerTests(t, func(t *testing.T) parleytest.NewBrokerFunc {
		ex := inmem.NewExchange()
		return func(node string, h parleytest.BrokerHooks) parley.Broker {
			b := ex.Broker(inmem.BrokerConfig{Node: node, Handler: h.Handler, Gone: h.Gone})
			t.Cleanup(func() { b.Close() })
			return b
		}
	})
}

func TestPresence(t *testing.T) {
	parleytest.RunPresenceTests(t, func(t *testing.T, ttl time.Duration) parleytest.NewPresenceFunc {
		reg := inmem.NewRegistry()
		return func(node string, hook parley.PresenceHook) parley.Presence {
			p := reg.Presence(inmem.PresenceConfig{Node: node, TTL: ttl, OnChange: hook})
			t.Cleanup(func() { p.Close() })
			return p
		}
	})
}
