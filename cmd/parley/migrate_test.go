package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"parley/postgres/pgtest"
	"parley/schema"
)

// TestMigrateCommand runs `parley migrate` on the embedded store: a dry
// run, the migration, and the report that nothing is left to do.
func TestMigrateCommand(t *testing.T) {
	dir := t.TempDir()
	for _, step := range []struct {
		args           []string
		prefix, suffix string // of what it prints
	}{
		{[]string{"--dry-run"}, "schema at version 0 of ", "pending: 0001_init.sql"},
		{nil, "schema at version ", "applied: 0001_init.sql"},
		{nil, "schema at version ", ": up to date"},
		{[]string{"--dry-run"}, "schema at version ", ": up to date"},
	} {
		var out, errs bytes.Buffer
		args := append([]string{"migrate", "--data", dir}, step.args...)
		if err := run(context.Background(), args, &out, &errs); err != nil {
			t.Fatalf("parley %s: %v (%s)", strings.Join(args, " "), err, errs.String())
		}
		// The first migration is always 0001_init.sql; later ones follow it.
		got := strings.TrimSpace(out.String())
		if !strings.HasPrefix(got, step.prefix) || !strings.Contains(got, step.suffix) {
			t.Errorf("parley %s printed %q, want %q…%q", strings.Join(args, " "), got, step.prefix, step.suffix)
		}
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"migrate", "--store", "mysql://x"}, &out, &out); err == nil {
		t.Error("parley migrate --store mysql://x: nil error, want the store refused")
	}
}

// TestMigrateCommandDryRun runs `parley migrate --dry-run`, as a process of
// its own, on a store left at each earlier schema version (built from
// that version's migrations, with a user in it): it prints the version,
// the newest version and the pending migrations by name, and changes
// nothing; `parley migrate` then applies exactly those.
func TestMigrateCommandDryRun(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		ms := loadMigrations(t, "../../sqlite")
		for i, m := range ms[:len(ms)-1] {
			t.Run(fmt.Sprintf("v%d", m.Version), func(t *testing.T) {
				dir := t.TempDir()
				stmts := []string{`CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`}
				for _, a := range ms[:i+1] {
					stmts = append(stmts, a.SQL, fmt.Sprintf(`INSERT INTO schema_migrations VALUES (%d, '%s', 0)`, a.Version, a.Name))
				}
				stmts = append(stmts, `INSERT INTO users (id, name, password_hash, created_at) VALUES ('u1', 'old', x'00', 1)`)
				execDB(t, filepath.Join(dir, "parley.db"), stmts...)
				before := dirState(t, dir)
				checkMigratePlan(t, ms, i, func() {
					if after := dirState(t, dir); !equalState(after, before) {
						t.Errorf("parley migrate --dry-run changed %s", dir)
					}
				}, "--data", dir)
			})
		}
	})
	t.Run("postgres", func(t *testing.T) {
		pgtest.URL(t)
		ms := loadMigrations(t, "../../postgres")
		for i, m := range ms[:len(ms)-1] {
			t.Run(fmt.Sprintf("v%d", m.Version), func(t *testing.T) {
				url := pgtest.Schema(t)
				pgtest.Exec(t, url, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`)
				for _, a := range ms[:i+1] {
					pgtest.Exec(t, url, a.SQL)
					pgtest.Exec(t, url, fmt.Sprintf(`INSERT INTO schema_migrations (version, name) VALUES (%d, '%s')`, a.Version, a.Name))
				}
				checkMigratePlan(t, ms, i, func() {}, "--store", url)
			})
		}
	})
}

// loadMigrations reads the migrations of the store package in dir, as
// the store embeds them.
func loadMigrations(t *testing.T, dir string) []schema.Migration {
	t.Helper()
	ms, err := schema.Load(os.DirFS(dir), "migrations/*.sql")
	if err != nil || len(ms) < 2 {
		t.Fatalf("migrations of %s: %d, %v; want two or more", dir, len(ms), err)
	}
	return ms
}

// checkMigratePlan runs `parley migrate --dry-run` twice on a store whose
// migrations up to ms[done] are applied, checks that it prints the plan
// of ms[done+1:] both times, calls unchanged, then runs `parley migrate`,
// which must apply that plan.
func checkMigratePlan(t *testing.T, ms []schema.Migration, done int, unchanged func(), store ...string) {
	t.Helper()
	var pending []string
	for _, m := range ms[done+1:] {
		pending = append(pending, m.Name)
	}
	latest := ms[len(ms)-1].Version
	migrate := func(want string, args ...string) {
		t.Helper()
		what := strings.Join(append([]string{"parley migrate"}, args...), " ")
		cmd := exec.Command(os.Args[0], append(append([]string{"migrate"}, store...), args...)...)
		cmd.Env = append(os.Environ(), "PARLEY_TEST_EXEC_CLI=1")
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s: %v (%s)", what, err, stderr.String())
		}
		if got := stdout.String(); got != want+"\n" {
			t.Errorf("%s printed %q, want %q", what, got, want+"\n")
		}
	}
	plan := fmt.Sprintf("schema at version %d of %d; pending: %s", ms[done].Version, latest, strings.Join(pending, ", "))
	migrate(plan, "--dry-run")
	migrate(plan, "--dry-run")
	unchanged()
	migrate(fmt.Sprintf("schema at version %d; applied: %s", latest, strings.Join(pending, ", ")))
	migrate(fmt.Sprintf("schema at version %d: up to date", latest), "--dry-run")
}
