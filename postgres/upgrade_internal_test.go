package postgres

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"parley/parleytest"
	"parley/postgres/pgtest"
	"parley/schema"
)

// TestUpgradeFromEveryVersion: a database of each earlier schema version,
// built from that version's migrations in a schema of its own and holding
// the upgrade world (parleytest/upgrade.go, written by
// testdata/upgrade/NNNN.sql in that version's schema), is first reported
// by a dry run with exactly the migrations after it pending, unchanged;
// Open then migrates it to the newest version with every row intact. The
// versions come from the embedded migrations: a new migration makes the
// version before it one more case, which fails until it has a fixture.
func TestUpgradeFromEveryVersion(t *testing.T) {
	pgtest.URL(t)
	ms, err := schema.Load(migrations, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	latest := ms[len(ms)-1]
	for i, m := range ms[:len(ms)-1] {
		t.Run(fmt.Sprintf("v%d", m.Version), func(t *testing.T) {
			var pending []string
			for _, p := range ms[i+1:] {
				pending = append(pending, p.Name)
			}
			testUpgradeFrom(t, ms[:i+1], pending, latest.Version)
		})
	}
}

// upgradeFeatures is what a database of version v holds of the upgrade
// world.
func upgradeFeatures(v int) parleytest.UpgradeFeatures {
	return parleytest.UpgradeFeatures{Roles: v >= 2, Changes: v >= 3, ChangeKeys: v >= 4}
}

// testUpgradeFrom builds a database with the migrations applied, as the
// program of the last of them left it, writes the upgrade world into it,
// and checks the dry run and the upgrade.
func testUpgradeFrom(t *testing.T, applied []schema.Migration, pending []string, latest int) {
	ctx := context.Background()
	v := applied[len(applied)-1].Version
	fixture := filepath.Join("testdata", "upgrade", fmt.Sprintf("%04d.sql", v))
	world, err := os.ReadFile(fixture)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no fixture %s for an upgrade from schema version %d: add one, SQL that writes the upgrade world "+
			"of parleytest/upgrade.go in version %d's schema (start from the one of version %d)", fixture, v, v, v-1)
	}
	if err != nil {
		t.Fatal(err)
	}
	url := pgtest.Schema(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	for _, m := range applied {
		if err := applyMigration(ctx, conn, m); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := conn.Exec(ctx, string(world), pgx.QueryExecModeSimpleProtocol); err != nil {
		t.Fatalf("%s: %v", fixture, err)
	}

	version := func() int {
		t.Helper()
		var n int
		if err := conn.QueryRow(ctx, `SELECT max(version) FROM schema_migrations`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	st, err := Migrate(ctx, url, false)
	if err != nil || st.Version != v || st.Latest != latest || !slices.Equal(st.Pending, pending) || len(st.Applied) != 0 {
		t.Errorf("Migrate(dry run) of version %d = %+v, %v; want version %d of %d, pending %v", v, st, err, v, latest, pending)
	}
	if got := version(); got != v {
		t.Errorf("schema version after the dry run = %d, want %d still", got, v)
	}

	s, err := Open(ctx, Config{URL: url})
	if err != nil {
		t.Fatalf("Open() (migrating from version %d) error = %v", v, err)
	}
	defer s.Close()
	if got := version(); got != latest {
		t.Errorf("schema version after Open = %d, want %d", got, latest)
	}
	parleytest.CheckUpgrade(t, s, upgradeFeatures(v))
}
