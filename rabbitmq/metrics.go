package rabbitmq

import "github.com/prometheus/client_golang/prometheus"

// metrics are the broker's Prometheus collectors.
type metrics struct {
	publishes   prometheus.Counter
	republishes prometheus.Counter
	returns     prometheus.Counter
	nacks       prometheus.Counter
	dropped     prometheus.Counter
	deliveries  prometheus.Counter
	rejected    prometheus.Counter
	reconnects  prometheus.Counter
	backlog     prometheus.Gauge
	connected   prometheus.Gauge
}

func newMetrics(reg prometheus.Registerer) *metrics {
	c := func(name, help string) prometheus.Counter {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help})
	}
	m := &metrics{
		publishes:   c("parley_broker_publishes_total", "Batches published to other nodes, one per destination node per committed change (first sends only)."),
		republishes: c("parley_broker_republishes_total", "Batches sent again after a reconnect or a negative confirm."),
		returns:     c("parley_broker_returns_total", "Batches returned because their destination node has no queue."),
		nacks:       c("parley_broker_nacks_total", "Negative publisher confirms."),
		dropped:     c("parley_broker_dropped_total", "Batches refused because the backlog was full."),
		deliveries:  c("parley_broker_deliveries_total", "Batches received from other nodes and handed to the local fan-out."),
		rejected:    c("parley_broker_rejected_total", "Deliveries that could not be decoded and were rejected."),
		reconnects:  c("parley_broker_reconnects_total", "Connections to RabbitMQ made after the first."),
		backlog: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_broker_backlog", Help: "Batches waiting to be sent or confirmed.",
		}),
		connected: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "parley_broker_connected", Help: "1 while connected to RabbitMQ.",
		}),
	}
	if reg != nil {
		reg.MustRegister(m.publishes, m.republishes, m.returns, m.nacks, m.dropped, m.deliveries,
			m.rejected, m.reconnects, m.backlog, m.connected)
	}
	return m
}
