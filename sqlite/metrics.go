package sqlite

import (
	"database/sql"
	"fmt"
	"parley/groupcommit"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are the store's Prometheus collectors. They always count; they are
// registered only when Config.Registerer is set.
type metrics struct {
	queries  *prometheus.CounterVec
	batch    *groupcommit.Metrics
	fsync    prometheus.Histogram
	ckErrors prometheus.Counter
	ckTime   *prometheus.HistogramVec
	total    atomic.Uint64 // every query, for Store.Queries
	reads    atomic.Uint64 // queries of the reader pool, for Store.Reads
}

// diskBuckets are the buckets of the store's fsync and checkpoint times:
// 50µs to 0.4s.
var diskBuckets = prometheus.ExponentialBuckets(50e-6, 2, 14)

func newMetrics() *metrics {
	return &metrics{
		queries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "parley_store_queries_total",
			Help: "Statements sent to SQLite, by kind (begin and commit included).",
		}, []string{"kind"}),
		batch: groupcommit.NewMetrics("Time of one group-commit batch in the writer: begin, the writes and commit (under sync=full the fsync follows, on the writer or the flusher)."),
		fsync: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "parley_store_fsync_seconds",
			Help:    "Time of one fsync of the WAL (sync=full), by the group-commit writer after its commit or by the flusher, which covers every batch committed before it.",
			Buckets: diskBuckets,
		}),
		ckErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "parley_store_checkpoint_errors_total",
			Help: "WAL checkpoints that failed (the WAL grows until one succeeds).",
		}),
		ckTime: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "parley_store_checkpoint_seconds",
			Help:    "Time of one WAL checkpoint, by kind: passive (alongside the writer), restart and truncate (the writer held back for all of it).",
			Buckets: diskBuckets,
		}, []string{"kind"}),
	}
}

func (m *metrics) register(r prometheus.Registerer, more ...prometheus.Collector) error {
	return m.batch.Register(r, append([]prometheus.Collector{m.queries, m.fsync, m.ckErrors, m.ckTime}, more...)...)
}

// query is one prepared statement and its counter.
type query struct {
	kind string // the label of parley_store_queries_total
	text string
	idx  int // position in its statement set (the writer caches tx statements by it)
	stmt *sql.Stmt
	hits prometheus.Counter
	m    *metrics
	read bool // a query of the reader pool
}

// count records one execution of q.
func (q *query) count() {
	q.hits.Inc()
	q.m.total.Add(1)
	if q.read {
		q.m.reads.Add(1)
	}
}

// prepareAll prepares every query of qs on db.
func prepareAll(db *sql.DB, m *metrics, qs []*query) error {
	for i, q := range qs {
		q.idx, q.m = i, m
		q.hits = m.queries.WithLabelValues(q.kind)
		if q.text == "" {
			continue // counted only
		}
		st, err := db.Prepare(q.text)
		if err != nil {
			return fmt.Errorf("prepare %s: %w", q.kind, err)
		}
		q.stmt = st
	}
	return nil
}

func closeAll(qs []*query) {
	for _, q := range qs {
		if q.stmt != nil {
			q.stmt.Close()
		}
	}
}
