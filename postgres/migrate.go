package postgres

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

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

// migration is one schema version.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the embedded migrations in version order.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrations, "migrations/*.sql")
	if err != nil {
		return nil, err
	}
	var ms []migration
	for _, name := range names {
		base := path.Base(name)
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("migration %s: name is not NNNN_name.sql", base)
		}
		b, err := migrations.ReadFile(name)
		if err != nil {
			return nil, err
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("migrations %s and %s share a version", ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}

// migrate applies the migrations the database has not seen yet, each in its
// own transaction together with its row in schema_migrations, and returns
// how many it applied. It holds a session advisory lock meanwhile, so that
// nodes starting at once apply each migration once: the others wait, then
// find nothing left to do.
func migrate(ctx context.Context, pool *pgxpool.Pool) (int, error) {
	ms, err := loadMigrations()
	if err != nil {
		return 0, err
	}
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return 0, fmt.Errorf("migrate: %w", err)
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext(current_schema()))`, migrationLockClass); err != nil {
		return 0, fmt.Errorf("migrate: lock: %w", err)
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
		return 0, fmt.Errorf("create schema_migrations: %w", err)
	}
	var current int
	if err := conn.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM schema_migrations`).Scan(&current); err != nil {
		return 0, fmt.Errorf("read schema version: %w", err)
	}
	if n := len(ms); n > 0 && current > ms[n-1].version {
		return 0, fmt.Errorf("database schema version %d is newer than this program's %d", current, ms[n-1].version)
	}
	applied := 0
	for _, m := range ms {
		if m.version <= current {
			continue
		}
		if err := applyMigration(ctx, conn.Conn(), m); err != nil {
			return applied, err
		}
		applied++
	}
	return applied, nil
}

func applyMigration(ctx context.Context, conn *pgx.Conn, m migration) error {
	err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, m.sql, pgx.QueryExecModeSimpleProtocol); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.version, m.name)
		return err
	})
	if err != nil {
		return fmt.Errorf("migration %s: %w", m.name, err)
	}
	return nil
}
