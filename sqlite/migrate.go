package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"fmt"

	"parley"
	"parley/schema"
)

// migrations holds the schema, one file per version: NNNN_name.sql. A
// migration, once released, is never edited: a change is a new file.
//
//go:embed migrations/*.sql
var migrations embed.FS

// migrate applies the migrations that db has not seen yet, each in its own
// transaction together with its row in schema_migrations. It returns the
// number applied.
func migrate(ctx context.Context, db *sql.DB) (int, error) {
	ms, err := schema.Load(migrations, "migrations/*.sql")
	if err != nil {
		return 0, err
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER PRIMARY KEY,
		name       TEXT NOT NULL,
		applied_at INTEGER NOT NULL
	)`); err != nil {
		return 0, fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	pending, err := schema.Pending(ms, current)
	if err != nil {
		return 0, err
	}
	for i, m := range pending {
		if err := applyMigration(ctx, db, m); err != nil {
			return i, err
		}
	}
	return len(pending), nil
}

func applyMigration(ctx context.Context, db *sql.DB, m schema.Migration) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)`,
		m.Version, m.Name, parley.Now().UnixMicro()); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	return nil
}
