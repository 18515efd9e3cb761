package postgres_test

import (
	"testing"

	"parley/parleytest"
)

func TestExpiry(t *testing.T) {
	parleytest.RunExpiryTests(t, newStore)
}
