package postgres_test

import (
	"context"
	"strings"
	"testing"

	"parley/postgres"
	"parley/postgres/pgtest"
)

// TestMigrate: a dry run changes nothing; applying creates the schema
// once; Open then finds nothing to do, and a database newer than this
// program is refused.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Schema(t)
	st, err := postgres.Migrate(ctx, url, false)
	if err != nil || st.Version != 0 || len(st.Pending) == 0 || len(st.Applied) != 0 {
		t.Fatalf("dry run on an empty schema = %+v, %v; want version 0 with pending migrations", st, err)
	}
	pending := st.Pending
	if st, err := postgres.Migrate(ctx, url, false); err != nil || st.Version != 0 {
		t.Fatalf("second dry run = %+v, %v: the first one changed the schema", st, err)
	}
	st, err = postgres.Migrate(ctx, url, true)
	if err != nil || strings.Join(st.Applied, ",") != strings.Join(pending, ",") || len(st.Pending) != 0 || st.Version != st.Latest {
		t.Fatalf("apply = %+v, %v; want %v applied", st, err, pending)
	}
	for _, apply := range []bool{false, true} {
		st, err = postgres.Migrate(ctx, url, apply)
		if err != nil || len(st.Applied)+len(st.Pending) != 0 || st.Version != st.Latest {
			t.Fatalf("Migrate(apply=%v) after applying = %+v, %v; want up to date", apply, st, err)
		}
	}
	s, err := postgres.Open(ctx, postgres.Config{URL: url})
	if err != nil {
		t.Fatalf("Open after migrate: %v", err)
	}
	s.Close()

	pgtest.Exec(t, url, `INSERT INTO schema_migrations (version, name) VALUES (9999, '9999_future.sql')`)
	for _, apply := range []bool{false, true} {
		if _, err := postgres.Migrate(ctx, url, apply); err == nil || !strings.Contains(err.Error(), "newer than this program") {
			t.Errorf("Migrate(apply=%v) of a newer database: %v, want it refused", apply, err)
		}
	}
	if s, err := postgres.Open(ctx, postgres.Config{URL: url}); err == nil {
		s.Close()
		t.Error("Open of a newer database: nil error, want it refused")
	}
}
