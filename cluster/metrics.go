package cluster

import "github.com/prometheus/client_golang/prometheus"

// metrics are the relay's Prometheus collectors.
type metrics struct {
	queued          prometheus.Gauge
	unpublished     prometheus.Gauge
	held            prometheus.Gauge
	holds           prometheus.Counter
	holdTime        prometheus.Histogram
	publishWait     prometheus.Histogram
	delivery        *prometheus.HistogramVec
	messages        *prometheus.CounterVec
	batches         *prometheus.CounterVec
	duplicates      prometheus.Counter
	beforeStart     prometheus.Counter
	filled          prometheus.Counter
	fills           *prometheus.CounterVec
	skipped         prometheus.Counter
	routeMisses     prometheus.Counter
	presenceLookups prometheus.Counter
	routeErrors     prometheus.Counter
	publishErrors   prometheus.Counter
	gone            prometheus.Counter
	headChecks      prometheus.Counter
	headErrors      prometheus.Counter
	broadcasts      prometheus.Counter
	signalsQueued   prometheus.Gauge
	signalsDropped  prometheus.Counter
}

// newMetrics returns the relay's collectors, registered with reg unless it
// is nil.
func newMetrics(reg prometheus.Registerer) *metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &metrics{
		queued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_cluster_queued", Help: "Events and batches waiting for the relay.",
		}),
		unpublished: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_cluster_unpublished", Help: "Commits of this node whose batches wait for the shared hot data to hold them before they are published.",
		}),
		held: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_cluster_held_messages", Help: "Messages held until an older one of their room arrives.",
		}),
		holds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_cluster_holds_total", Help: "Messages held because an older one of their room had not been delivered yet.",
		}),
		holdTime: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "parley_cluster_hold_seconds",
			Help:    "How long a held message waited before it was delivered.",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2},
		}),
		publishWait: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "parley_cluster_publish_wait_seconds",
			Help:    "How long a commit of this node waited between the relay and its publishes to the other nodes (the shared hot data's write, then the sender's queue).",
			Buckets: []float64{.0005, .001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2},
		}),
		delivery: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "parley_cluster_delivery_seconds",
			Help: "From a message's sent_at (set by the node that committed it, as its commit began) to its hand-over to this node's fan-out, " +
				"by how it came: at once from this node's commit (local) or another node's batch (remote), after waiting behind a gap (held), or read from the store first (store).",
			Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .2, .5, 1, 2},
		}, []string{"how"}),
		messages: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_cluster_messages_total",
			Help: "Messages the relay handled, by origin: committed here (local) or received from another node (remote).",
		}, []string{"origin"}),
		batches: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_cluster_batches_total",
			Help: "Batches the relay published, by kind: message, member (joins, leaves, roles, room info), change (edits and deletions) or signal (typing and reads).",
		}, []string{"kind"}),
		fills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_cluster_gap_fills_total",
			Help: "Reads of missing messages from the store, by cause: the gap timer (timer), a local commit behind a gap (local), another node's message behind a gap (remote), a room head ahead of delivery (head).",
		}, []string{"reason"}),
		duplicates: c("parley_cluster_duplicates_total", "Messages dropped because their room had delivered that seq."),
		beforeStart: c("parley_cluster_before_start_total", "Messages dropped because they reached the relay after it had started delivering their room at a later seq "+
			"(the room's first message here waited GapWait, and no local subscriber wanted older seqs or none's position was known): never delivered on this node."),
		filled:          c("parley_cluster_gap_filled_total", "Messages read from the store to close a gap."),
		skipped:         c("parley_cluster_gap_skipped_total", "Seqs skipped because a gap could not be filled (clients fill it with since-seq)."),
		routeMisses:     c("parley_cluster_route_misses_total", "Routes computed from the store and presence instead of the cache."),
		presenceLookups: c("parley_cluster_presence_lookups_total", "Users whose nodes a route rebuild read from presence (the others were remembered)."),
		routeErrors:     c("parley_cluster_route_errors_total", "Failed member or presence lookups."),
		publishErrors:   c("parley_cluster_publish_errors_total", "Batches the broker refused."),
		gone:            c("parley_cluster_nodes_gone_total", "Nodes dropped from presence because their queue was gone."),
		headChecks:      c("parley_cluster_head_checks_total", "Checks of the rooms' heads against what this node delivered."),
		headErrors:      c("parley_cluster_head_errors_total", "Failed reads or writes of the rooms' heads."),
		broadcasts:      c("parley_cluster_broadcasts_total", "Messages sent to every known node because routes were unsure (presence down or reset)."),
		signalsQueued: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_cluster_signals_queued", Help: "Typing and read signals waiting for the signal goroutine.",
		}),
		signalsDropped: c("parley_cluster_signals_dropped_total", "Typing and read signals dropped because the signal queue was full (messages are never dropped)."),
	}
	m.initLabels()
	if reg != nil {
		m.register(reg)
	}
	return m
}

// initLabels creates the labelled series that are known in advance, so
// that they read 0 before their first event.
func (m *metrics) initLabels() {
	for _, how := range []string{"local", "remote", "held", "store"} {
		m.delivery.WithLabelValues(how)
	}
	m.messages.WithLabelValues("local")
	m.messages.WithLabelValues("remote")
	m.batches.WithLabelValues("message")
	m.batches.WithLabelValues("member")
	m.batches.WithLabelValues("signal")
	for _, reason := range []string{"timer", "local", "remote", "head"} {
		m.fills.WithLabelValues(reason)
	}
}

// register registers every collector with reg.
func (m *metrics) register(reg prometheus.Registerer) {
	reg.MustRegister(m.queued, m.unpublished, m.held, m.holds, m.holdTime, m.publishWait, m.delivery, m.messages, m.batches, m.duplicates, m.beforeStart, m.filled, m.fills, m.skipped,
		m.routeMisses, m.presenceLookups, m.routeErrors, m.publishErrors, m.gone,
		m.headChecks, m.headErrors, m.broadcasts, m.signalsQueued, m.signalsDropped)
}
