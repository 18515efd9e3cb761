package groupcommit

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Metrics are the Prometheus histograms of a store's group commit, shared
// by every store so that their names and buckets agree: a dashboard reads
// any of them alike. Observe is a Config.OnBatch hook.
type Metrics struct {
	BatchSize prometheus.Histogram     // parley_store_batch_size
	Commit    prometheus.Histogram     // parley_store_commit_seconds
	Stages    *prometheus.HistogramVec // parley_store_write_stage_seconds{stage}

	queue, commit, wait, flush, done prometheus.Observer // Stages' children
}

// NewMetrics returns the histograms; commitHelp says what the store's
// commit time covers.
func NewMetrics(commitHelp string) *Metrics {
	m := &Metrics{
		BatchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "parley_store_batch_size",
			Help:    "Writes per group-commit transaction.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 11), // 1 to 1,024 (the SQLite writer's default MaxBatch)
		}),
		Commit: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "parley_store_commit_seconds",
			Help:    commitHelp,
			Buckets: prometheus.ExponentialBuckets(100e-6, 2, 14), // 100µs to 0.8s
		}),
		Stages: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "parley_store_write_stage_seconds",
			Help: "Where each committed write's time went, one observation per write and stage: " +
				"queue (handed to the writer until its batch began), commit (its batch's transaction), " +
				"wait (commit done until the fsync covering it began), fsync (that fsync), " +
				"done (the commit callbacks before the writer is woken).",
			Buckets: prometheus.ExponentialBuckets(25e-6, 2, 16), // 25µs to 0.8s
		}, []string{"stage"}),
	}
	m.queue = m.Stages.WithLabelValues("queue")
	m.commit = m.Stages.WithLabelValues("commit")
	m.wait = m.Stages.WithLabelValues("wait")
	m.flush = m.Stages.WithLabelValues("fsync")
	m.done = m.Stages.WithLabelValues("done")
	return m
}

// ObserveTiming records one write's stages (a Config.OnTiming hook). A
// store without a Flush stage records no wait and fsync.
func (m *Metrics) ObserveTiming(t Timing) {
	m.queue.Observe(t.Queue.Seconds())
	m.commit.Observe(t.Commit.Seconds())
	if t.Flush > 0 {
		m.wait.Observe(t.Wait.Seconds())
		m.flush.Observe(t.Flush.Seconds())
	}
	m.done.Observe(t.Done.Seconds())
}

// Observe records one batch (a Config.OnBatch hook).
func (m *Metrics) Observe(size int, took time.Duration, _ error) {
	m.BatchSize.Observe(float64(size))
	m.Commit.Observe(took.Seconds())
}

// Register registers the histograms and the store's own collectors with
// r. A store's metrics are registered once per registerer: a second store
// on the same one is an error that says so.
func (m *Metrics) Register(r prometheus.Registerer, own ...prometheus.Collector) error {
	for _, c := range append([]prometheus.Collector{m.BatchSize, m.Commit, m.Stages}, own...) {
		if err := r.Register(c); err != nil {
			var are prometheus.AlreadyRegisteredError
			if errors.As(err, &are) {
				return fmt.Errorf("register metrics: %w (one store per registerer)", err)
			}
			return fmt.Errorf("register metrics: %w", err)
		}
	}
	return nil
}
