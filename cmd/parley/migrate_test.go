package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
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
