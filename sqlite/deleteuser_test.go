package sqlite_test

import (
	"testing"

	"parley/parleytest"
)

func TestDeleteUser(t *testing.T) {
	parleytest.RunDeleteUserTests(t, newStore)
}

func TestRenameSender(t *testing.T) {
	parleytest.RunRenameSenderTests(t, newStore)
}
