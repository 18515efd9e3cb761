package pgtest

import (
	"context"
	"net/url"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"

	"parley"
)

// URL returns PARLEY_TEST_POSTGRES, or skips the test (saying which
// variable to set) when it is not set.
func URL(t testing.TB) string {
	t.Helper()
	u := os.Getenv("PARLEY_TEST_POSTGRES")
	if u == "" {
		t.Skip("PARLEY_TEST_POSTGRES is not set: set it to a PostgreSQL URL " +
			"(postgres://postgres@127.0.0.1:5432/test?sslmode=disable) to run the PostgreSQL tests")
	}
	return u
}

// Schema creates an empty schema, dropped when the test ends, and returns
// a URL of PARLEY_TEST_POSTGRES whose connections use it (search_path). It
// skips the test like URL.
func Schema(t testing.TB) string {
	t.Helper()
	base := URL(t)
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		t.Fatalf("PARLEY_TEST_POSTGRES = %q: want a postgres:// URL", base)
	}
	name := "parley_test_" + parley.NewID()[:16]
	Exec(t, base, "CREATE SCHEMA "+name)
	t.Cleanup(func() { Exec(t, base, "DROP SCHEMA "+name+" CASCADE") })
	q := u.Query()
	q.Set("search_path", name)
	u.RawQuery = q.Encode()
	return u.String()
}

// Exec runs one statement on a connection of its own.
func Exec(t testing.TB, dbURL, sql string) {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
}
