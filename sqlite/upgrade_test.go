package sqlite

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"parley/parleytest"
	"parley/schema"
)

// TestUpgradeFromEveryVersion: a database of each earlier schema version,
// built from that version's migrations and holding the upgrade world
// (parleytest/upgrade.go, written by testdata/upgrade/NNNN.sql in that
// version's schema), is first reported by a dry run with exactly the
// migrations after it pending, unchanged; Open then migrates it to the
// newest version with every row intact. The versions come from the
// embedded migrations: a new migration makes the version before it one
// more case, which fails until it has a fixture.
func TestUpgradeFromEveryVersion(t *testing.T) {
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
			testUpgradeFrom(t, m.Version, pending, latest.Version)
		})
	}
}

// upgradeFeatures is what a database of version v holds of the upgrade
// world.
func upgradeFeatures(v int) parleytest.UpgradeFeatures {
	return parleytest.UpgradeFeatures{Roles: v >= 2, Changes: v >= 3, ChangeKeys: v >= 4}
}

func testUpgradeFrom(t *testing.T, v int, pending []string, latest int) {
	ctx := context.Background()
	fixture := filepath.Join("testdata", "upgrade", fmt.Sprintf("%04d.sql", v))
	world, err := os.ReadFile(fixture)
	if errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("no fixture %s for an upgrade from schema version %d: add one, SQL that writes the upgrade world "+
			"of parleytest/upgrade.go in version %d's schema (start from the one of version %d)", fixture, v, v, v-1)
	}
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "parley.db")
	db := dbAtVersion(t, path, v)
	if _, err := db.Exec(string(world)); err != nil {
		db.Close()
		t.Fatalf("%s: %v", fixture, err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Migrate(ctx, path, false)
	if err != nil || st.Version != v || st.Latest != latest || !slices.Equal(st.Pending, pending) || len(st.Applied) != 0 {
		t.Errorf("Migrate(dry run) of version %d = %+v, %v; want version %d of %d, pending %v", v, st, err, v, latest, pending)
	}
	if after, err := os.ReadFile(path); err != nil || !bytes.Equal(after, before) {
		t.Errorf("the dry run changed %s (%v)", path, err)
	}
	if st, err := Migrate(ctx, path, false); err != nil || st.Version != v {
		t.Errorf("Migrate(dry run) again = %+v, %v; want version %d still", st, err, v)
	}

	s, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatalf("Open() (migrating from version %d) error = %v", v, err)
	}
	defer s.Close()
	if st, err := Migrate(ctx, path, false); err != nil || st.Version != latest || len(st.Pending) != 0 {
		t.Errorf("Migrate(dry run) after Open = %+v, %v; want version %d, nothing pending", st, err, latest)
	}
	parleytest.CheckUpgrade(t, s, upgradeFeatures(v))
}
