package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"parley"
	"parley/schema"
)

// migrations holds the schema, one file per version: NNNN_name.sql. A
// migration, once released, is never edited: a change is a new file.
//
//go:embed migrations/*.sql
var migrations embed.FS

// Migrate brings the database at path to this program's schema, creating
// it if needed, and returns where it stands; with apply false it only
// reports, and changes nothing (a missing file is an empty database). It
// is what Open does first, for `parley migrate`. Processes migrating at
// once apply each migration once: the others find it applied.
func Migrate(ctx context.Context, path string, apply bool) (schema.Status, error) {
	if !apply {
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			ms, err := schema.Load(migrations, "migrations/*.sql")
			if err != nil {
				return schema.Status{}, err
			}
			return schema.NewStatus(ms, 0)
		}
	}
	if apply {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return schema.Status{}, fmt.Errorf("sqlite: %w", err)
		}
	}
	cfg := Config{Path: path}
	cfg.defaults()
	db := openDB(path, 1, apply, cfg)
	defer db.Close()
	if apply {
		if err := walMode(ctx, db); err != nil {
			return schema.Status{}, fmt.Errorf("sqlite: %s: %w", path, err)
		}
	}
	st, err := migrate(ctx, db, apply)
	if err != nil {
		return st, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	return st, nil
}

// createMigrationsTable makes the table of the applied migrations. Its
// text, as SQLite keeps it in sqlite_master, is part of the schema that
// Inspect compares with a database's, so it is never edited either.
const createMigrationsTable = `CREATE TABLE IF NOT EXISTS schema_migrations (
			version    INTEGER PRIMARY KEY,
			name       TEXT NOT NULL,
			applied_at INTEGER NOT NULL
		)`

// migrate applies the migrations that db has not seen yet, each in its own
// transaction together with its row in schema_migrations, and returns the
// schema's status; with apply false it only reads the status.
func migrate(ctx context.Context, db *sql.DB, apply bool) (schema.Status, error) {
	ms, err := schema.Load(migrations, "migrations/*.sql")
	if err != nil {
		return schema.Status{}, err
	}
	if apply {
		if _, err := db.ExecContext(ctx, createMigrationsTable); err != nil {
			return schema.Status{}, fmt.Errorf("create schema_migrations: %w", err)
		}
	}
	var current int
	err = db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current)
	if err != nil && (apply || !noMigrationTable(ctx, db)) {
		return schema.Status{}, fmt.Errorf("read schema version: %w", err)
	}
	st, err := schema.NewStatus(ms, current)
	if err != nil || !apply {
		return st, err
	}
	pending, _ := schema.Pending(ms, current)
	for _, m := range pending {
		applied, err := applyMigration(ctx, db, m)
		if err != nil {
			return st, err
		}
		st.Done(m, applied)
	}
	return st, nil
}

// noMigrationTable reports whether db has no schema_migrations table: a
// database no migration ever ran on.
func noMigrationTable(ctx context.Context, db *sql.DB) bool {
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n)
	return err == nil && n == 0
}

// applyMigration applies m in a transaction of its own, which holds
// SQLite's write lock from its BEGIN (IMMEDIATE, dsnParams). It reads the
// version again under that lock, so that of two processes migrating at
// once the second finds m applied (applied false) instead of failing on
// the tables the first created.
func applyMigration(ctx context.Context, db *sql.DB, m schema.Migration) (applied bool, err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("migration %s: %w", m.Name, err)
	}
	defer tx.Rollback()
	var current int
	if err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return false, fmt.Errorf("migration %s: read schema version: %w", m.Name, err)
	}
	if current >= m.Version {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return false, fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, parley.Now().UnixMicro()); err != nil {
		return false, fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("migration %s: %w", m.Name, err)
	}
	return true, nil
}

// migrateTo brings db, an empty database, to schema version: the
// migrations up to it applied, each as migrate applies it, so that its
// schema is the one a program of that version made.
func migrateTo(ctx context.Context, db *sql.DB, version int) error {
	ms, err := schema.Load(migrations, "migrations/*.sql")
	if err != nil {
		return err
	}
	if _, err := db.ExecContext(ctx, createMigrationsTable); err != nil {
		return fmt.Errorf("create schema_migrations: %w", err)
	}
	for _, m := range ms {
		if m.Version > version {
			break
		}
		if _, err := applyMigration(ctx, db, m); err != nil {
			return err
		}
	}
	return nil
}
