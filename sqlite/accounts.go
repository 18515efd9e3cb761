package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"parley"
)

// accountWriteQueries are the writer's statements of account deletion.
type accountWriteQueries struct {
	nameHeld, holdName, eraseUser *query
}

func (q *accountWriteQueries) all() []*query {
	if q.nameHeld == nil {
		*q = accountWriteQueries{
			// ?1 name, ?2 now.
			nameHeld: &query{kind: "name_held", text: `SELECT 1 FROM name_holds WHERE name = ?1 AND until > ?2`},
			// ?1 user, ?2 until: the user's current name.
			holdName: &query{kind: "hold_name", text: `INSERT INTO name_holds (name, until)
				SELECT name, ?2 FROM users WHERE id = ?1
				ON CONFLICT (name) DO UPDATE SET until = excluded.until`},
			eraseUser: &query{kind: "erase_user", text: `UPDATE users SET name = 'deleted-user:' || id, password_hash = x''
				WHERE id = ?`},
		}
	}
	return []*query{q.nameHeld, q.holdName, q.eraseUser}
}

// DeleteUser deletes account u (DELETE /api/me) in one transaction: its
// tokens go, its row stays (messages and bans point at it) under the
// name "deleted-user:" + id with an empty password hash, so that no
// login finds it, and its name is held back from CreateUser until
// holdUntil. Memberships and messages are the caller's (package chat
// leaves the rooms and deletes the messages through the store's own
// operations, whose events tell caches and members). Fails with
// CodeNotFound for an unknown user.
func (s *Store) DeleteUser(ctx context.Context, u parley.User, holdUntil time.Time) error {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		if _, err := w.userName(u.ID); err != nil {
			return result{}, err
		}
		q := &w.s.wq.accounts
		if _, err := w.exec(w.s.wq.deleteTokens, u.ID); err != nil {
			return result{}, fmt.Errorf("delete user tokens: %w", err)
		}
		if _, err := w.exec(q.holdName, u.ID, holdUntil.UnixMicro()); err != nil {
			return result{}, fmt.Errorf("hold name: %w", err)
		}
		if _, err := w.exec(q.eraseUser, u.ID); err != nil {
			return result{}, fmt.Errorf("erase user: %w", err)
		}
		return result{}, nil
	})
	return err
}

// nameHeld reports whether a deleted account's hold keeps name from a new
// account at time now (unix microseconds).
func (w *wtx) nameHeld(name string, now int64) (bool, error) {
	var one int
	err := w.row(w.s.wq.accounts.nameHeld, name, now).Scan(&one)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	return false, fmt.Errorf("name held: %w", err)
}
