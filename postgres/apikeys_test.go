package postgres_test

import (
	"testing"

	"parley/parleytest"
	"parley/postgres/pgtest"
)

func TestAPIKeys(t *testing.T) {
	pgtest.URL(t)
	parleytest.RunAPIKeyTests(t, newStore)
}
