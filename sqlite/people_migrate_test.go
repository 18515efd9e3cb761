package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"parley"
)

// TestMigratePeople: a database of version 1 gets owners from 0002: the
// creator of each group room (its longest-standing member), or, where the
// creator has left, the longest-standing member; direct rooms get none.
func TestMigratePeople(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "parley.db")
	db := dbAtVersion(t, path, 1)
	// Room "kept": created by a at 100, b joined at 200. Room "left": created
	// by a at 300, who left; c joined at 400, b at 500. A direct room of a
	// and b at 600.
	for _, stmt := range []string{
		`INSERT INTO users VALUES ('a', 'alice', x'00', 1), ('b', 'bob', x'00', 2), ('c', 'carol', x'00', 3)`,
		`INSERT INTO rooms VALUES ('kept', 'group', 'kept', 0, 2, 0, 100, 100, NULL),
			('left', 'group', 'left', 0, 2, 0, 300, 300, NULL), ('dm', 'direct', '', 2, 2, 0, 600, 600, 'a:b')`,
		`INSERT INTO members VALUES ('kept', 'a', 0, 100), ('kept', 'b', 0, 200),
			('left', 'c', 0, 400), ('left', 'b', 0, 500), ('dm', 'a', 0, 600), ('dm', 'b', 0, 600)`,
	} {
		if _, err := db.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	db.Close()

	s, err := Open(ctx, Config{Path: path})
	if err != nil {
		t.Fatalf("Open() (migrating) error = %v", err)
	}
	defer s.Close()
	for _, tt := range []struct{ room, user, role string }{
		{"kept", "a", parley.RoleOwner}, {"kept", "b", parley.RoleMember},
		{"left", "c", parley.RoleOwner}, {"left", "b", parley.RoleMember},
		{"dm", "a", parley.RoleMember}, {"dm", "b", parley.RoleMember},
	} {
		m, err := s.Member(ctx, tt.room, tt.user)
		if err != nil || m.Role != tt.role {
			t.Errorf("Member(%s, %s) = %q, %v, want %q", tt.room, tt.user, m.Role, err, tt.role)
		}
	}
}

// dbAtVersion creates a database at path with the migrations up to
// version applied, as an older program left it, for a test of the
// migrations after it; the caller closes it.
func dbAtVersion(t *testing.T, path string, version int) *sql.DB {
	t.Helper()
	ctx := context.Background()
	cfg := Config{Path: path}
	cfg.defaults()
	db := openDB(path, 1, true, cfg)
	if err := walMode(ctx, db); err != nil {
		t.Fatal(err)
	}
	if err := migrateTo(ctx, db, version); err != nil {
		t.Fatal(err)
	}
	return db
}
