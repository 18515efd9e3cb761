package postgres

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"

	"parley"
	"parley/postgres/pgtest"
	"parley/schema"
)

// TestMigratePeople: a database of version 1 gets owners from 0002: the
// creator of each group room (its longest-standing member), or, where the
// creator has left, the longest-standing member; direct rooms get none.
func TestMigratePeople(t *testing.T) {
	ctx := context.Background()
	url := pgtest.Schema(t)
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	ms, err := schema.Load(migrations, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (version integer PRIMARY KEY, name text NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now())`); err != nil {
		t.Fatal(err)
	}
	if err := applyMigration(ctx, conn, ms[0]); err != nil {
		t.Fatal(err)
	}
	// Room "kept": created by a at t1, b joined at t2. Room "left": created
	// by a at t3, who left; c joined at t4, b at t5. A direct room of a and
	// b at t6.
	for _, stmt := range []string{
		`INSERT INTO users VALUES ('a', 'alice', '\x00', now()), ('b', 'bob', '\x00', now()), ('c', 'carol', '\x00', now())`,
		`INSERT INTO rooms VALUES ('kept', 'group', 'kept', 0, 2, 0, 'epoch'::timestamptz + interval '1 s', 'epoch'::timestamptz + interval '1 s', NULL),
			('left', 'group', 'left', 0, 2, 0, 'epoch'::timestamptz + interval '3 s', 'epoch'::timestamptz + interval '3 s', NULL),
			('dm', 'direct', '', 2, 2, 0, 'epoch'::timestamptz + interval '6 s', 'epoch'::timestamptz + interval '6 s', 'a:b')`,
		`INSERT INTO members VALUES ('kept', 'a', 0, 'epoch'::timestamptz + interval '1 s'), ('kept', 'b', 0, 'epoch'::timestamptz + interval '2 s'),
			('left', 'c', 0, 'epoch'::timestamptz + interval '4 s'), ('left', 'b', 0, 'epoch'::timestamptz + interval '5 s'),
			('dm', 'a', 0, 'epoch'::timestamptz + interval '6 s'), ('dm', 'b', 0, 'epoch'::timestamptz + interval '6 s')`,
	} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	s, err := Open(ctx, Config{URL: url})
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
