package sqlite

import (
	"context"
	"fmt"
)

// Revocation deletes the token rows rather than marking them revoked: a
// deleted token is refused by the very query that finds a live one (no
// second condition that a future query could forget), nothing keeps a
// dead secret's hash, and no migration is needed (tokens_user indexes the
// delete of all of a user's tokens). What it gives up is a record of past
// sessions, which Parley does not show anyone.

// RevokeToken implements parley.Store.
func (s *Store) RevokeToken(ctx context.Context, hash []byte) error {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		if _, err := w.exec(w.s.wq.deleteToken, hash); err != nil {
			return result{}, fmt.Errorf("revoke token: %w", err)
		}
		return result{}, nil
	})
	return err
}

// RevokeUserTokens implements parley.Store.
func (s *Store) RevokeUserTokens(ctx context.Context, userID string) error {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		if _, err := w.exec(w.s.wq.deleteTokens, userID); err != nil {
			return result{}, fmt.Errorf("revoke tokens: %w", err)
		}
		return result{}, nil
	})
	return err
}
