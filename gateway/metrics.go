package gateway

import (
	"parley/stomp"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the gateway's Prometheus collectors. The per-command counters
// are resolved once, so that counting a frame costs one atomic add.
type metrics struct {
	connections       prometheus.Gauge
	framesIn          [32]prometheus.Counter // by stomp.Command
	framesOut         [32]prometheus.Counter
	deliveries        prometheus.Counter
	eventDeliveries   prometheus.Counter
	writes            prometheus.Counter
	writeStalls       prometheus.Counter
	slowConsumer      *prometheus.CounterVec
	refusals          []prometheus.Counter // by refusalCodes
	heartbeatTimeouts prometheus.Counter
	connRefusals      [2]prometheus.Counter // by refusedNodeLimit, refusedUserLimit
	latency           prometheus.Histogram
}

// Indexes of metrics.connRefusals.
const (
	refusedNodeLimit = iota
	refusedUserLimit
)

// newMetrics makes the collectors and registers them with reg, if any;
// queued counts the frames in every outbound queue (Server.queuedFrames).
func newMetrics(reg prometheus.Registerer, queued func() int64) *metrics {
	m := &metrics{
		connections: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_stomp_connections",
			Help: "Open STOMP connections (WebSocket and TCP).",
		}),
		deliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_stomp_deliveries_total",
			Help: "MESSAGE frames written to sockets.",
		}),
		eventDeliveries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_stomp_event_deliveries_total",
			Help: "Room event MESSAGE frames written to sockets (not counted in parley_stomp_deliveries_total).",
		}),
		writes: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_stomp_writes_total",
			Help: "Socket writes of outbound frames (each carries one or more frames).",
		}),
		writeStalls: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_stomp_write_stalls_total",
			Help: "Writes of the writer pool that a socket did not take at once: the rest waits for the client on a goroutine of the session's own.",
		}),
		slowConsumer: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_stomp_slow_consumer_closes_total",
			Help: "Sessions closed because they did not keep up, by reason.",
		}, []string{"reason"}),
		heartbeatTimeouts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_stomp_heartbeat_timeouts_total",
			Help: "Sessions closed because the client fell silent.",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "parley_stomp_delivery_latency_seconds",
			Help:    "From the commit of a message to its MESSAGE frame written to a socket.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .02, .05, .1, .25, .5, 1, 2.5},
		}),
	}
	in := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_stomp_frames_in_total",
		Help: "Frames received, by command (heartbeat for an end-of-line).",
	}, []string{"command"})
	out := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_stomp_frames_out_total",
		Help: "Frames sent, by command (heartbeat for an end-of-line).",
	}, []string{"command"})
	refusals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_stomp_refusals_total",
		Help: "ERROR frames sent (each closes its session), by error code.",
	}, []string{"code"})
	for c := stomp.Heartbeat; c <= stomp.Error; c++ {
		m.framesIn[c] = in.WithLabelValues(c.String())
		m.framesOut[c] = out.WithLabelValues(c.String())
	}
	for i := range m.framesIn {
		if m.framesIn[i] == nil {
			m.framesIn[i] = in.WithLabelValues("invalid")
			m.framesOut[i] = out.WithLabelValues("invalid")
		}
	}
	for _, code := range refusalCodes {
		m.refusals = append(m.refusals, refusals.WithLabelValues(code))
	}
	for _, r := range []string{reasonQueueFrames, reasonQueueBytes, reasonCatchUpLag, reasonWriteTimeout} {
		m.slowConsumer.WithLabelValues(r)
	}
	connRefusals := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "parley_stomp_connections_refused_total",
		Help: "Connections refused for a connection limit, by reason: node_limit (--stomp-max-conns), user_limit (--stomp-max-conns-per-user).",
	}, []string{"reason"})
	m.connRefusals[refusedNodeLimit] = connRefusals.WithLabelValues("node_limit")
	m.connRefusals[refusedUserLimit] = connRefusals.WithLabelValues("user_limit")
	queueDepth := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "parley_stomp_outbound_queued_frames",
		Help: "Frames waiting in the outbound queues of every session.",
	}, func() float64 { return float64(queued()) })
	if reg != nil {
		reg.MustRegister(m.connections, in, out, m.deliveries, m.eventDeliveries, m.writes, m.writeStalls, m.slowConsumer, refusals,
			m.heartbeatTimeouts, m.latency, queueDepth, connRefusals)
	}
	return m
}
