package sqlite_test

import (
	"context"
	"path/filepath"
	"testing"

	"parley/parleytest"
	"parley/sqlite"
)

// TestChangeKeysSurviveRestart: the idempotency keys of an edit and a
// deletion are committed with them: after a restart their repeats still
// apply nothing and get the first answer.
func TestChangeKeysSurviveRestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "parley.db")
	s, err := sqlite.Open(context.Background(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatalf("Open() error = %v", err)
	}
	k := parleytest.MakeKeyedChanges(t, s)
	if err := s.Close(); err != nil {
		t.Fatalf("Close() error = %v", err)
	}
	parleytest.RepeatKeyedChanges(t, mustOpen(t, sqlite.Config{Path: path}), k)
}
