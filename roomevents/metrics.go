package roomevents

import "github.com/prometheus/client_golang/prometheus"

// eventMetrics are the Prometheus collectors of Events.
type eventMetrics struct {
	events       *prometheus.CounterVec
	fanout       prometheus.Counter
	subs         prometheus.Gauge
	dropped      prometheus.Counter
	absorbed     prometheus.Counter
	typingCapped prometheus.Counter
	lookupErrors prometheus.Counter
}

func newEventMetrics(reg prometheus.Registerer) eventMetrics {
	m := eventMetrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_room_events_total", Help: "Room events made on this node, by kind (online and offline: announced).",
		}, []string{"kind"}),
		fanout: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_fanout_total", Help: "Room events handed to local event subscriptions.",
		}),
		subs: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_room_events_subscriptions", Help: "Local event subscriptions.",
		}),
		dropped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_dropped_total", Help: "Room events dropped because the intake queue was full (every event subscription was then dropped as lagged).",
		}),
		absorbed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_typing_absorbed_total", Help: "Typing signals absorbed by the per-user, per-room throttle.",
		}),
		typingCapped: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_typing_capped_total", Help: "Typing signals dropped because their room has more members than the typing cap (or its members could not be read).",
		}),
		lookupErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_room_events_lookup_errors_total", Help: "Failed member, membership or presence lookups of room events.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.events, m.fanout, m.subs, m.dropped, m.absorbed, m.typingCapped, m.lookupErrors)
	}
	return m
}
