package cache

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// kind is what a request asked the cache for; it labels the metrics.
type kind int

const (
	kindRoom kind = iota
	kindMember
	kindMembers
	kindMemberships
	kindRooms
	kindMessages
	kindUser
	kindToken
	kindRoomMembers
	kindSearch
	numKinds
)

var kindNames = [numKinds]string{"room", "member", "members", "memberships", "rooms", "messages", "user", "token", "room_members", "search"}

// metrics counts requests by kind and result. The counters are resolved once
// so that counting is one atomic add.
type metrics struct {
	hits, misses [numKinds]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) metrics {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_cache_requests_total",
		Help: "Reads of the cache by kind and result (hit: served from memory; miss: asked the inner store).",
	}, []string{"kind", "result"})
	if reg != nil {
		if err := reg.Register(vec); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic("cache: register metrics: " + err.Error())
			}
			vec = are.ExistingCollector.(*prometheus.CounterVec) // a second cache on the same registry
		}
	}
	var m metrics
	for k := range numKinds {
		m.hits[k] = vec.WithLabelValues(kindNames[k], "hit")
		m.misses[k] = vec.WithLabelValues(kindNames[k], "miss")
	}
	return m
}

func (m *metrics) hit(k kind)  { m.hits[k].Inc() }
func (m *metrics) miss(k kind) { m.misses[k].Inc() }
