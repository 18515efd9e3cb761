package postgres

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// The statements of server API keys: a key's creation checks its bot
// account is live and its name and id free in one statement, as
// CreateToken does.
const (
	apiKeyCols = `id, name, user_id, hash, scopes, coalesce(room_id, ''), created_at, revoked_at`
	// $1 id, $2 name, $3 user, $4 hash, $5 scopes, $6 created, $7 room.
	insertAPIKeyQuery = `WITH u AS (SELECT id FROM users WHERE id = $3 AND NOT starts_with(name, 'deleted-user:')),
		k AS (INSERT INTO api_keys (id, name, user_id, hash, scopes, created_at, room_id) SELECT $1, $2, u.id, $4, $5, $6, nullif($7, '') FROM u
			ON CONFLICT DO NOTHING RETURNING 1)
		SELECT EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM k)`
	// $1 name, $2 now.
	revokeAPIKeyQuery = `UPDATE api_keys SET revoked_at = coalesce(revoked_at, $2) WHERE name = $1 RETURNING ` + apiKeyCols
	apiKeyByIDQuery   = `SELECT k.id, k.name, k.user_id, k.hash, k.scopes, coalesce(k.room_id, ''), k.created_at, k.revoked_at, u.name, u.created_at
		FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.id = $1`
	apiKeysQuery        = `SELECT ` + apiKeyCols + ` FROM api_keys ORDER BY name`
	revokedAPIKeysQuery = `SELECT ` + apiKeyCols + ` FROM api_keys WHERE revoked_at IS NOT NULL AND revoked_at >= $1 ORDER BY revoked_at`
)

// CreateAPIKey stores k (its ID, Name, UserID, Hash and Scopes; CreatedAt
// now when zero). Fails with CodeNotFound for an unknown or deleted user
// and CodeNameTaken for a name or id in use.
func (s *Store) CreateAPIKey(ctx context.Context, k parley.APIKey) (parley.APIKey, error) {
	o := &createAPIKey{k: k}
	_, err := s.write(ctx, o)
	return o.k, err
}

type createAPIKey struct{ k parley.APIKey }

func (o *createAPIKey) lockRoom() string { return "" }
func (o *createAPIKey) shard() string    { return o.k.UserID }

func (o *createAPIKey) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	if o.k.CreatedAt.IsZero() {
		o.k.CreatedAt = now
	}
	b.Queue(insertAPIKeyQuery, o.k.ID, o.k.Name, o.k.UserID, o.k.Hash, strings.Join(o.k.Scopes, " "), o.k.CreatedAt, o.k.RoomID)
}

func (o *createAPIKey) decode(row pgx.Row) (result, []parley.Event, error) {
	var userOK, inserted bool
	if err := row.Scan(&userOK, &inserted); err != nil {
		return result{}, nil, err
	}
	switch {
	case !userOK:
		return result{}, nil, errUserNotFound(o.k.UserID)
	case !inserted:
		return result{}, nil, parley.Errorf(parley.CodeNameTaken, "API key name %q is taken", o.k.Name)
	}
	return result{}, nil, nil
}

// RevokeAPIKey revokes the key named name at time at (a key revoked
// already keeps its first revocation) and returns it. Fails with
// CodeNotFound for an unknown name.
func (s *Store) RevokeAPIKey(ctx context.Context, name string, at time.Time) (parley.APIKey, error) {
	o := &revokeAPIKey{name: name, at: at}
	_, err := s.write(ctx, o)
	return o.k, err
}

type revokeAPIKey struct {
	name string
	at   time.Time
	k    parley.APIKey
}

func (o *revokeAPIKey) lockRoom() string { return "" }
func (o *revokeAPIKey) shard() string    { return o.name }
func (o *revokeAPIKey) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	b.Queue(revokeAPIKeyQuery, o.name, o.at)
}

func (o *revokeAPIKey) decode(row pgx.Row) (result, []parley.Event, error) {
	k, err := scanAPIKey(row)
	if errors.Is(err, pgx.ErrNoRows) {
		return result{}, nil, parley.Errorf(parley.CodeNotFound, "no API key named %q", o.name)
	}
	o.k = k
	return result{}, nil, err
}

// APIKey returns the key of id and its bot account. Fails with
// CodeNotFound for an unknown id.
func (s *Store) APIKey(ctx context.Context, id string) (parley.APIKey, parley.User, error) {
	var u parley.User
	k, err := scanAPIKey(scanMore{s.pool.QueryRow(ctx, apiKeyByIDQuery, id), []any{&u.Name, &u.CreatedAt}})
	if errors.Is(err, pgx.ErrNoRows) {
		return k, u, parley.Errorf(parley.CodeNotFound, "API key not found")
	}
	if err != nil {
		return k, u, s.readErr("api key", err)
	}
	u.ID = k.UserID
	return k, u, nil
}

// APIKeys returns every key, revoked ones too, by name.
func (s *Store) APIKeys(ctx context.Context) ([]parley.APIKey, error) {
	return s.apiKeys(ctx, "api keys", apiKeysQuery)
}

// RevokedAPIKeys returns the keys revoked at or after since, oldest
// revocation first.
func (s *Store) RevokedAPIKeys(ctx context.Context, since time.Time) ([]parley.APIKey, error) {
	return s.apiKeys(ctx, "revoked api keys", revokedAPIKeysQuery, since)
}

func (s *Store) apiKeys(ctx context.Context, op, text string, args ...any) ([]parley.APIKey, error) {
	rows, err := s.pool.Query(ctx, text, args...)
	if err != nil {
		return nil, s.readErr(op, err)
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (parley.APIKey, error) { return scanAPIKey(r) })
	if err != nil {
		return nil, s.readErr(op, err)
	}
	return keys, nil
}

// scanMore scans a row whose key columns are followed by more.
type scanMore struct {
	row  pgx.Row
	more []any
}

func (sm scanMore) Scan(dest ...any) error { return sm.row.Scan(append(dest, sm.more...)...) }

func scanAPIKey(row pgx.Row) (parley.APIKey, error) {
	var k parley.APIKey
	var scopes string
	if err := row.Scan(&k.ID, &k.Name, &k.UserID, &k.Hash, &scopes, &k.RoomID, &k.CreatedAt, &k.RevokedAt); err != nil {
		return k, err
	}
	k.Scopes = strings.Fields(scopes)
	k.CreatedAt = k.CreatedAt.UTC()
	if k.RevokedAt != nil {
		at := k.RevokedAt.UTC()
		k.RevokedAt = &at
	}
	return k, nil
}
