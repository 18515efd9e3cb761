package sqlite_test

import (
	"testing"

	"parley/parleytest"
)

func TestAPIKeys(t *testing.T) {
	parleytest.RunAPIKeyTests(t, newStore)
}
