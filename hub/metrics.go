package hub

import "github.com/prometheus/client_golang/prometheus"

// metrics are the hub's Prometheus collectors.
type metrics struct {
	pending      prometheus.Gauge
	subs         *prometheus.GaugeVec
	roomSubs     prometheus.Gauge
	userSubs     prometheus.Gauge
	messages     prometheus.Counter
	fanout       prometheus.Counter
	lagged       prometheus.Counter
	memberErrors prometheus.Counter
	dispatched   prometheus.Observer // stage "dispatch" of parley_hub_stage_seconds
	handedOff    prometheus.Observer // stage "handoff"
}

func newMetrics(reg prometheus.Registerer) metrics {
	m := metrics{
		pending: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_hub_pending_events",
			Help: "Committed events waiting for the hub's dispatcher.",
		}),
		subs: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "parley_hub_subscriptions",
			Help: "Local subscriptions by destination kind (room topic or personal queue).",
		}, []string{"kind"}),
		messages: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_hub_messages_total",
			Help: "Messages dispatched by the hub.",
		}),
		fanout: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_hub_fanout_total",
			Help: "Messages handed to local subscriptions (one per subscription per message).",
		}),
		lagged: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_hub_lagged_total",
			Help: "Subscriptions dropped because live messages outran their catch-up.",
		}),
		memberErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_hub_member_errors_total",
			Help: "Failed member lookups for the personal queues.",
		}),
	}
	stages := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name: "parley_hub_stage_seconds",
		Help: "Per live message, from the hub taking it from the store to: dispatch, the start of its fan-out; " +
			"handoff, its hand-off to the last local subscription's queue.",
		Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16), // 25µs to 0.8s
	}, []string{"stage"})
	m.dispatched = stages.WithLabelValues("dispatch")
	m.handedOff = stages.WithLabelValues("handoff")
	m.roomSubs = m.subs.WithLabelValues("room")
	m.userSubs = m.subs.WithLabelValues("user")
	if reg != nil {
		reg.MustRegister(m.pending, m.subs, m.messages, m.fanout, m.lagged, m.memberErrors, stages)
	}
	return m
}

// updateGaugesLocked sets the subscription gauges from h.nsubs.
func (h *Hub) updateGaugesLocked() {
	h.m.roomSubs.Set(float64(h.nsubs[0]))
	h.m.userSubs.Set(float64(h.nsubs[1]))
}
