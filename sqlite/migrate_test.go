package sqlite

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestMigrate: a dry run changes nothing, not even on a missing file;
// applying creates the schema once; Open then finds nothing to do, and a
// database newer than this program is refused.
func TestMigrate(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "sub", "parley.db")
	st, err := Migrate(ctx, path, false)
	if err != nil || st.Version != 0 || len(st.Pending) == 0 || len(st.Applied) != 0 {
		t.Fatalf("dry run on a missing file = %+v, %v; want version 0 with pending migrations", st, err)
	}
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the dry run created the database: %v", err)
	}
	pending := st.Pending
	st, err = Migrate(ctx, path, true)
	if err != nil || strings.Join(st.Applied, ",") != strings.Join(pending, ",") || len(st.Pending) != 0 || st.Version != st.Latest {
		t.Fatalf("apply = %+v, %v; want %v applied", st, err, pending)
	}
	for _, apply := range []bool{false, true} {
		st, err = Migrate(ctx, path, apply)
		if err != nil || len(st.Applied)+len(st.Pending) != 0 || st.Version != st.Latest {
			t.Fatalf("Migrate(apply=%v) after applying = %+v, %v; want up to date", apply, st, err)
		}
	}
	s, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatalf("Open after migrate: %v", err)
	}
	s.Close()

	cfg := Config{Path: path}
	cfg.defaults()
	db := openDB(path, 1, true, cfg)
	if _, err := db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, '9999_future.sql', 0)`); err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, apply := range []bool{false, true} {
		if _, err := Migrate(ctx, path, apply); err == nil || !strings.Contains(err.Error(), "newer than this program") {
			t.Errorf("Migrate(apply=%v) of a newer database: %v, want it refused", apply, err)
		}
	}
	if _, err := Open(ctx, Config{Path: path}); err == nil {
		t.Error("Open of a newer database: nil error, want it refused")
	}
}

// TestMigrateConcurrently: processes migrating one database at once (here,
// connections of their own) apply each migration once between them, and
// none fails on what another created.
func TestMigrateConcurrently(t *testing.T) {
	for round := range 3 {
		path := filepath.Join(t.TempDir(), "parley.db")
		fresh, err := Migrate(context.Background(), path, false)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		applied := make([][]string, 4)
		errs := make([]error, len(applied))
		for i := range applied {
			wg.Go(func() {
				st, err := Migrate(context.Background(), path, true)
				applied[i], errs[i] = st.Applied, err
			})
		}
		wg.Wait()
		var all []string
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d, migration %d: %v", round, i, err)
			}
			all = append(all, applied[i]...)
		}
		st, err := Migrate(context.Background(), path, false)
		if err != nil || len(all) != len(fresh.Pending) || st.Version != st.Latest {
			t.Errorf("round %d: applied %v between them, then %+v, %v; want each of %v once", round, all, st, err, fresh.Pending)
		}
	}
}
