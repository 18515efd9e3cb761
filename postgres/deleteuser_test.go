package postgres_test

import (
	"testing"

	"parley/parleytest"
	"parley/postgres/pgtest"
)

func TestDeleteUser(t *testing.T) {
	pgtest.URL(t)
	parleytest.RunDeleteUserTests(t, newStore)
}

func TestRenameSender(t *testing.T) {
	pgtest.URL(t)
	parleytest.RunRenameSenderTests(t, newStore)
}
