package main

import (
	"fmt"
	"log/slog"

	"parley"
	"parley/postgres"
	"parley/retention"
)

// startRetention starts the retention sweeper on the durable store db
// (design §3b "Data"): for --retention, and for the rooms with a retention
// of their own, so it runs even with --retention 0 (a pass then visits
// only those rooms, by an index). It deletes through db, whose
// commits reach every cache, the fan-out and the change stream as any
// deletion does; in cluster mode one node sweeps at a time (the store's
// advisory lock) and the relay carries the deletions to the others.
func (m *Main) startRetention(db parley.Store) error {
	cfg := m.Config
	if cfg.Retention < 0 {
		return fmt.Errorf("--retention %v: want 0 (keep forever) or more", cfg.Retention)
	}
	st, ok := db.(retention.Store)
	switch {
	case !ok && cfg.Retention > 0:
		return fmt.Errorf("--retention: the store %T cannot expire messages", db)
	case !ok:
		return nil
	}
	rc := retention.Config{
		Store: st, Retention: cfg.Retention, Interval: cfg.RetentionInterval, Registerer: m.registry,
		OnPass: func(n int, err error) {
			switch {
			case err != nil:
				slog.Warn("retention pass", "deleted", n, "err", err)
			case n > 0:
				slog.Info("retention pass", "deleted", n)
			}
		},
	}
	if pg, ok := db.(*postgres.Store); ok {
		rc.Lock = pg.SweepLock
	}
	var err error
	m.expiry, err = retention.Start(rc)
	return err
}
