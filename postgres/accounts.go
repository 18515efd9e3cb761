package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// deleteUserQuery deletes account $1 (its current name held back until
// $2) in one statement: its tokens go, its row stays (messages and bans
// point at it) under the name 'deleted-user:' || id with an empty password
// hash. It returns the number of accounts found, 0 or 1.
const deleteUserQuery = `WITH u AS (SELECT id, name FROM users WHERE id = $1),
	t AS (DELETE FROM tokens WHERE user_id IN (SELECT id FROM u)),
	h AS (INSERT INTO name_holds (name, until) SELECT name, $2 FROM u
		ON CONFLICT (name) DO UPDATE SET until = excluded.until),
	e AS (UPDATE users SET name = 'deleted-user:' || users.id, password_hash = '\x' FROM u WHERE users.id = u.id)
	SELECT count(*) FROM u`

// DeleteUser deletes account u (DELETE /api/me) in one transaction: its
// tokens go, its row stays (messages and bans point at it) under the
// name "deleted-user:" + id with an empty password hash, so that no login
// finds it, and its name is held back from CreateUser until holdUntil.
// Memberships and messages are the caller's (package chat leaves the rooms
// and deletes the messages through the store's own operations, whose
// events tell caches and members). Fails with CodeNotFound for an unknown
// user.
func (s *Store) DeleteUser(ctx context.Context, u parley.User, holdUntil time.Time) error {
	_, err := s.write(ctx, &deleteUser{u: u, until: holdUntil})
	return err
}

// deleteUser runs through the writer of u's name, as the CreateUser of
// that name does, so that the two never race.
type deleteUser struct {
	u     parley.User
	until time.Time
}

func (o *deleteUser) lockRoom() string { return "" }
func (o *deleteUser) shard() string    { return o.u.Name }
func (o *deleteUser) crossShard() bool { return true } // the tokens' rows
func (o *deleteUser) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	b.Queue(deleteUserQuery, o.u.ID, o.until)
}

func (o *deleteUser) decode(row pgx.Row) (result, []parley.Event, error) {
	var n int64
	if err := row.Scan(&n); err != nil {
		return result{}, nil, err
	}
	if n == 0 {
		return result{}, nil, parley.Errorf(parley.CodeNotFound, "user %s not found", o.u.ID)
	}
	return result{}, nil, nil
}
