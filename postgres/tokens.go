package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// Revocation deletes the token rows rather than marking them revoked: a
// deleted token is refused by the very query that finds a live one (no
// second condition that a future query could forget), nothing keeps a
// dead secret's hash, and no migration is needed (tokens_user indexes the
// delete of all of a user's tokens). What it gives up is a record of past
// sessions, which Parley does not show anyone.

// RevokeToken implements parley.Store.
func (s *Store) RevokeToken(ctx context.Context, hash []byte) error {
	_, err := s.write(ctx, &revokeTokens{hash: hash})
	return err
}

// RevokeUserTokens implements parley.Store.
func (s *Store) RevokeUserTokens(ctx context.Context, userID string) error {
	_, err := s.write(ctx, &revokeTokens{userID: userID, all: true})
	return err
}

// revokeTokens deletes the token hash, or with all every token of userID.
type revokeTokens struct {
	hash   []byte
	userID string
	all    bool
}

func (o *revokeTokens) lockRoom() string { return "" }

func (o *revokeTokens) shard() string {
	if o.all {
		return o.userID
	}
	return string(o.hash)
}

func (o *revokeTokens) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	if o.all {
		q.deleteTokens.count()
		b.Queue(q.deleteTokens.text, o.userID)
		return
	}
	q.deleteToken.count()
	b.Queue(q.deleteToken.text, o.hash)
}

func (o *revokeTokens) decode(row pgx.Row) (result, []parley.Event, error) {
	var n int64
	err := row.Scan(&n)
	return result{}, nil, err
}
