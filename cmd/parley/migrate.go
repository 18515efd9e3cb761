package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"parley/dirlock"
	"parley/postgres"
	"parley/schema"
	"parley/sqlite"
)

// runMigrate is `parley migrate`: it brings the store that `parley serve`
// with the same --store and --data would open to this program's schema,
// or with --dry-run reports what that would apply. serve applies pending
// migrations itself at start; migrating first lets a rolling upgrade of a
// cluster do it once, before any node of the new version starts.
func runMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("parley migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var store, data string
	var dryRun bool
	fs.StringVar(&store, "store", "", "store: empty for SQLite in --data, or postgres://user@host:port/db")
	fs.StringVar(&data, "data", "./data", "data directory of the embedded SQLite store")
	fs.BoolVar(&dryRun, "dry-run", false, "report the schema version and the pending migrations; change nothing")
	fs.String("config", "", configHelp)
	setUsage(fs, stderr, "usage: parley migrate [flags]\n\nApply the store's pending schema migrations (serve also applies them at start).\nEvery flag can also be set by the environment variable named beside it.\n\n")
	if err := parseFlags(fs, args, os.Getenv); err != nil {
		return err
	}
	var st schema.Status
	var err error
	switch {
	case isPostgres(store):
		st, err = postgres.Migrate(ctx, store, !dryRun)
	case store == "":
		if !dryRun {
			// Not under a running server: it would go on with the old
			// schema in its statements and caches. A dry run only reads.
			if err := os.MkdirAll(data, 0o750); err != nil {
				return fmt.Errorf("data directory: %w", err)
			}
			lock, err := dirlock.Acquire(data)
			if err != nil {
				return fmt.Errorf("data directory: %w: stop the server first", err)
			}
			defer lock.Close()
		}
		path := sqliteFile(data)
		st, err = sqlite.Migrate(ctx, path, !dryRun)
	default:
		return fmt.Errorf("--store %q: want empty (SQLite) or postgres://…", store)
	}
	if err != nil {
		if len(st.Applied) > 0 {
			fmt.Fprintln(stdout, st)
		}
		return err
	}
	fmt.Fprintln(stdout, st)
	return nil
}
