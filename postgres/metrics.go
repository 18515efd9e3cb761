package postgres

import (
	"parley/groupcommit"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the store's Prometheus collectors. They always count; they are
// registered only when Config.Registerer is set. The names are the sqlite
// store's, so that one dashboard shows either.
type metrics struct {
	queries *prometheus.CounterVec
	batch   *groupcommit.Metrics
	retries prometheus.Counter
	total   atomic.Uint64 // every query, for Store.Queries
}

func newMetrics() *metrics {
	return &metrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_store_queries_total",
			Help: "Statements sent to PostgreSQL, by kind (begin and commit included).",
		}, []string{"kind"}),
		batch: groupcommit.NewMetrics("Time of one group-commit batch: begin, the writes, commit and the event sink, retries included."),
		retries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_store_batch_retries_total",
			Help: "Group-commit transactions run again after a deadlock, a serialization failure or a unique-key race with another node.",
		}),
	}
}

func (m *metrics) register(r prometheus.Registerer, more ...prometheus.Collector) error {
	return m.batch.Register(r, append([]prometheus.Collector{m.queries, m.retries}, more...)...)
}

// query is one SQL statement and its counter. pgx prepares and caches each
// statement per connection by its text.
type query struct {
	kind string // the label of parley_store_queries_total
	text string
	hits prometheus.Counter
	m    *metrics
}

// count records one execution of q.
func (q *query) count() {
	q.hits.Inc()
	q.m.total.Add(1)
}

// bind attaches the counters of m to every query of qs.
func bind(m *metrics, qs ...*query) {
	for _, q := range qs {
		q.m = m
		q.hits = m.queries.WithLabelValues(q.kind)
	}
}
