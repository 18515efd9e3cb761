package redis

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// hotKind is what a read asked the hot data for; it labels the metrics.
type hotKind int

const (
	kindRoom        hotKind = iota // a room's info
	kindLast                       // a room's last message
	kindMessages                   // a history page within the newest messages
	kindMemberships                // a user's rooms and read positions
	kindMember                     // one membership
	kindUser                       // a user (this node's memory)
	kindToken                      // an access token (this node's memory)
	kindRoomMembers                // a room's member listing (hotmembers.go)
	kindNotify                     // a user's mention counts and levels (this node's memo: hotnotify.go)
	numHotKinds
)

var hotKindNames = [numHotKinds]string{"room", "last", "messages", "memberships", "member", "user", "token", "room_members", "notify"}

// hotMetrics counts the hot data's reads by kind and result, resolved once
// so that counting is one atomic add. A miss is a read that went on to the
// inner store (PostgreSQL).
type hotMetrics struct {
	hits, misses [numHotKinds]prometheus.Counter
	retried      prometheus.Counter // invalidations that succeeded on a retry
	replayed     prometheus.Counter // owed entries written by a later write (hotowed.go)
}

func newHotMetrics(reg prometheus.Registerer) hotMetrics {
	vec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_hot_requests_total",
		Help: "Reads of the shared hot data by kind and result (hit: served from Redis or this node's memory; miss: asked PostgreSQL).",
	}, []string{"kind", "result"})
	if reg != nil {
		if err := reg.Register(vec); err != nil {
			var are prometheus.AlreadyRegisteredError
			if !errors.As(err, &are) {
				panic("redis: register hot metrics: " + err.Error())
			}
			vec = are.ExistingCollector.(*prometheus.CounterVec)
		}
	}
	m := hotMetrics{
		retried: registerCounter(reg, "parley_hot_invalidation_retries_total",
			"Invalidations of joins and leaves that failed on commit and succeeded when retried."),
		replayed: registerCounter(reg, "parley_hot_owed_replays_total",
			"Last messages, read positions and message changes whose write to Redis failed, written by a later write."),
	}
	for k := range numHotKinds {
		m.hits[k] = vec.WithLabelValues(hotKindNames[k], "hit")
		m.misses[k] = vec.WithLabelValues(hotKindNames[k], "miss")
	}
	return m
}

func (m *hotMetrics) hit(k hotKind)  { m.hits[k].Inc() }
func (m *hotMetrics) miss(k hotKind) { m.misses[k].Inc() }

// registerCounter registers a counter with reg (when not nil), or returns
// the one registered under its name already.
func registerCounter(reg prometheus.Registerer, name, help string) prometheus.Counter {
	c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			panic("redis: register hot metrics: " + err.Error())
		}
		return are.ExistingCollector.(prometheus.Counter)
	}
	return c
}
