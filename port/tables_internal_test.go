package port

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"parley/postgres"
	"parley/postgres/pgtest"
	"parley/sqlite"
)

// TestTablesCoverSchemas: every table and column of both stores' newest
// schemas is copied (tables) or left out on purpose (notCopied), so that
// a migration that adds one fails here until the port carries it.
func TestTablesCoverSchemas(t *testing.T) {
	ctx := context.Background()
	carried := map[string]bool{}
	for _, tb := range tables {
		carried[tb.name] = true
		for _, c := range tb.cols {
			carried[tb.name+"."+c.name] = true
		}
	}
	check := func(store string, cols map[string][]string) {
		for table, names := range cols {
			if _, skip := notCopied[table]; skip {
				continue
			}
			if !carried[table] {
				t.Errorf("%s table %s is not ported: add it to tables in port/tables.go (or to notCopied, saying why)", store, table)
				continue
			}
			for _, c := range names {
				if _, skip := notCopied[table+"."+c]; !skip && !carried[table+"."+c] {
					t.Errorf("%s column %s.%s is not ported: add it to tables in port/tables.go (or to notCopied, saying why)", store, table, c)
				}
			}
		}
		for _, tb := range tables {
			if len(cols[tb.name]) == 0 {
				t.Errorf("the port copies %s, which the %s schema has not", tb.name, store)
			}
			for _, c := range tb.cols {
				if !slices.Contains(cols[tb.name], c.name) {
					t.Errorf("the port copies %s.%s, which the %s schema has not", tb.name, c.name, store)
				}
			}
		}
	}

	path := filepath.Join(t.TempDir(), "parley.db")
	if _, err := sqlite.Migrate(ctx, path, true); err != nil {
		t.Fatal(err)
	}
	db := sqlite.OpenReadOnly(path)
	defer db.Close()
	rows, err := db.QueryContext(ctx, `SELECT m.name, p.name FROM sqlite_master m, pragma_table_info(m.name) p
		WHERE m.type = 'table' AND m.name NOT LIKE 'sqlite_%' AND m.name NOT LIKE 'messages_fts%'`)
	if err != nil {
		t.Fatal(err)
	}
	lite := map[string][]string{}
	for rows.Next() {
		var table, col string
		if err := rows.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		lite[table] = append(lite[table], col)
	}
	rows.Close()
	check("SQLite", lite)

	url := pgtest.Schema(t)
	if _, err := postgres.Migrate(ctx, url, true); err != nil {
		t.Fatal(err)
	}
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	prow, err := conn.Query(ctx, `SELECT table_name::text, column_name::text FROM information_schema.columns WHERE table_schema = current_schema()`)
	if err != nil {
		t.Fatal(err)
	}
	pg := map[string][]string{}
	for prow.Next() {
		var table, col string
		if err := prow.Scan(&table, &col); err != nil {
			t.Fatal(err)
		}
		pg[table] = append(pg[table], strings.TrimSpace(col))
	}
	if err := prow.Err(); err != nil {
		t.Fatal(err)
	}
	check("PostgreSQL", pg)
}
