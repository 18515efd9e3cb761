package postgres

import (
	"context"
	"embed"
	"fmt"
	"time"

	"parley/schema"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// migrations holds the schema, one file per version: NNNN_name.sql. A
// migration, once released, is never edited: a change is a new file.
//
//go:embed migrations/*.sql
var migrations embed.FS

// migrationLockClass is the first key of the advisory lock that serializes
// migrations; the second is the hash of the schema, so that stores in
// different schemas of one database do not wait for each other.
const migrationLockClass = 0x7061726c // "parl"

// Migrate brings the database at url to this program's schema and returns
// where it stands; with apply false it only reports, and changes nothing.
// It is what Open does first, for `parley migrate`; nodes running at the
// same time are safe, as with Open.
func Migrate(ctx context.Context, url string, apply bool) (schema.Status, error) {
	pc, err := pgxpool.ParseConfig(url)
	if err != nil {
		return schema.Status{}, fmt.Errorf("postgres: %w", err)
	}
	pc.MaxConns = 1
	if pc.ConnConfig.ConnectTimeout == 0 {
		pc.ConnConfig.ConnectTimeout = 10 * time.Second
	}
	pool, err := pgxpool.NewWithConfig(ctx, pc)
	if err != nil {
		return schema.Status{}, fmt.Errorf("postgres: %w", err)
	}
	defer pool.Close()
	st, err := migrate(ctx, pool, apply)
	if err != nil {
		return st, fmt.Errorf("postgres: %s@%s/%s: %w", pc.ConnConfig.User, pc.ConnConfig.Host, pc.ConnConfig.Database, err)
	}
	return st, nil
}

// migrate applies the migrations the database has not seen yet, each in its
// own transaction together with its row in schema_migrations, and returns
// the schema's status; with apply false it only reads the status. Applying
// holds a session advisory lock, so that nodes starting at once apply each
// migration once: the others wait, then find nothing left to do.
func migrate(ctx context.Context, pool *pgxpool.Pool, apply bool) (schema.Status, error) {
	ms, err := schema.Load(migrations, "migrations/*.sql")
	if err != nil {
		return schema.Status{}, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return schema.Status{}, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if !apply {
		var current int
		var exists bool
		err := conn.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists)
		if err == nil && exists {
			err = conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current)
		}
		if err != nil {
			return schema.Status{}, fmt.Errorf("read schema version: %w", err)
		}
		return schema.NewStatus(ms, current)
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext(current_schema()))`, migrationLockClass); err != nil {
		return schema.Status{}, fmt.Errorf("migrate: lock: %w", err)
	}
	defer func() {
		// On a dead connection the lock died with the session already.
		conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1, hashtext(current_schema()))`, migrationLockClass)
	}()

	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer PRIMARY KEY,
		name       text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`); err != nil {
		return schema.Status{}, fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return schema.Status{}, fmt.Errorf("read schema version: %w", err)
	}
	st, err := schema.NewStatus(ms, current)
	if err != nil {
		return st, err
	}
	pending, _ := schema.Pending(ms, current)
	for _, m := range pending {
		if err := applyMigration(ctx, conn.Conn(), m); err != nil {
			return st, err
		}
		st.Done(m, true)
	}
	return st, nil
}

func applyMigration(ctx context.Context, conn *pgx.Conn, m schema.Migration) error {
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, m.SQL, pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name)
		return err
	})
	if err != nil {
		return fmt.Errorf("migration %s: %w", m.Name, err)
	}
	return nil
}
