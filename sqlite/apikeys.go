package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"parley"
)

// apiKeyWriteQueries are the writer's statements of server API keys.
type apiKeyWriteQueries struct {
	insert, revoke *query
}

func (q *apiKeyWriteQueries) all() []*query {
	if q.insert == nil {
		*q = apiKeyWriteQueries{
			insert: &query{kind: "insert_api_key", text: `INSERT INTO api_keys (id, name, user_id, hash, scopes, room_id, created_at)
				VALUES (?, ?, ?, ?, ?, nullif(?, ''), ?)`},
			// ?1 name, ?2 now: the key as it stands after.
			revoke: &query{kind: "revoke_api_key", text: `UPDATE api_keys SET revoked_at = coalesce(revoked_at, ?2)
				WHERE name = ?1 RETURNING ` + apiKeyCols},
		}
	}
	return []*query{q.insert, q.revoke}
}

// apiKeyReadQueries are the readers' statements of server API keys.
type apiKeyReadQueries struct {
	byID, list, revokedSince *query
}

const apiKeyCols = `id, name, user_id, hash, scopes, coalesce(room_id, ''), created_at, revoked_at`

func (q *apiKeyReadQueries) all() []*query {
	if q.byID == nil {
		*q = apiKeyReadQueries{
			byID: &query{kind: "api_key", text: `SELECT k.id, k.name, k.user_id, k.hash, k.scopes, coalesce(k.room_id, ''), k.created_at, k.revoked_at,
				u.name, u.created_at FROM api_keys k JOIN users u ON u.id = k.user_id WHERE k.id = ?`},
			list: &query{kind: "api_keys", text: `SELECT ` + apiKeyCols + ` FROM api_keys ORDER BY name`},
			// api_keys_revoked holds only the revoked keys.
			revokedSince: &query{kind: "revoked_api_keys", text: `SELECT ` + apiKeyCols + ` FROM api_keys
				WHERE revoked_at IS NOT NULL AND revoked_at >= ? ORDER BY revoked_at`},
		}
	}
	return []*query{q.byID, q.list, q.revokedSince}
}

// CreateAPIKey stores k (its ID, Name, UserID, Hash and Scopes; CreatedAt
// now when zero). Fails with CodeNotFound for an unknown or deleted user
// and CodeNameTaken for a name or id in use.
func (s *Store) CreateAPIKey(ctx context.Context, k parley.APIKey) (parley.APIKey, error) {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		if err := w.liveUser(k.UserID); err != nil {
			return result{}, err
		}
		if k.CreatedAt.IsZero() {
			k.CreatedAt = fromMicro(w.now())
		}
		_, err := w.exec(w.s.wq.apiKeys.insert, k.ID, k.Name, k.UserID, k.Hash, strings.Join(k.Scopes, " "), k.RoomID, k.CreatedAt.UnixMicro())
		if isConstraint(err) { // the user exists: the name or the id is taken
			return result{}, parley.Errorf(parley.CodeNameTaken, "API key name %q is taken", k.Name)
		}
		if err != nil {
			return result{}, fmt.Errorf("create api key: %w", err)
		}
		return result{}, nil
	})
	return k, err
}

// RevokeAPIKey revokes the key named name at time at (a key revoked
// already keeps its first revocation) and returns it. Fails with
// CodeNotFound for an unknown name.
func (s *Store) RevokeAPIKey(ctx context.Context, name string, at time.Time) (parley.APIKey, error) {
	var k parley.APIKey
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		var err error
		k, err = scanAPIKey(w.row(w.s.wq.apiKeys.revoke, name, at.UnixMicro()))
		if errors.Is(err, sql.ErrNoRows) {
			return result{}, parley.Errorf(parley.CodeNotFound, "no API key named %q", name)
		}
		return result{}, err
	})
	return k, err
}

// APIKey returns the key of id and its bot account. Fails with
// CodeNotFound for an unknown id.
func (s *Store) APIKey(ctx context.Context, id string) (parley.APIKey, parley.User, error) {
	q := s.rq.apiKeys.byID
	q.count()
	var u parley.User
	var created int64
	k, err := scanAPIKey(scanWith{q.stmt.QueryRowContext(ctx, id), []any{&u.Name, &created}})
	if errors.Is(err, sql.ErrNoRows) {
		return k, u, parley.Errorf(parley.CodeNotFound, "API key not found")
	}
	if err != nil {
		return k, u, s.readErr("api key", err)
	}
	u.ID, u.CreatedAt = k.UserID, fromMicro(created)
	return k, u, nil
}

// APIKeys returns every key, revoked ones too, by name.
func (s *Store) APIKeys(ctx context.Context) ([]parley.APIKey, error) {
	return s.apiKeys(ctx, s.rq.apiKeys.list)
}

// RevokedAPIKeys returns the keys revoked at or after since, oldest
// revocation first.
func (s *Store) RevokedAPIKeys(ctx context.Context, since time.Time) ([]parley.APIKey, error) {
	return s.apiKeys(ctx, s.rq.apiKeys.revokedSince, since.UnixMicro())
}

func (s *Store) apiKeys(ctx context.Context, q *query, args ...any) ([]parley.APIKey, error) {
	q.count()
	rows, err := q.stmt.QueryContext(ctx, args...)
	if err != nil {
		return nil, s.readErr(q.kind, err)
	}
	defer rows.Close()
	var keys []parley.APIKey
	for rows.Next() {
		k, err := scanAPIKey(rows)
		if err != nil {
			return nil, s.readErr(q.kind, err)
		}
		keys = append(keys, k)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr(q.kind, err)
	}
	return keys, nil
}

func scanAPIKey(row scanner) (parley.APIKey, error) {
	var k parley.APIKey
	var scopes string
	var created int64
	var revoked sql.NullInt64
	if err := row.Scan(&k.ID, &k.Name, &k.UserID, &k.Hash, &scopes, &k.RoomID, &created, &revoked); err != nil {
		return k, err
	}
	k.Scopes = strings.Fields(scopes)
	k.CreatedAt = fromMicro(created)
	if revoked.Valid {
		at := fromMicro(revoked.Int64)
		k.RevokedAt = &at
	}
	return k, nil
}
