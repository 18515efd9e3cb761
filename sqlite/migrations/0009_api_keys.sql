-- Server API keys (apikeys.go at the root): each belongs to a bot account
-- (a user whose id says it is a bot, with no password). Only the SHA-256
-- of a key's secret is kept; a revoked key keeps its row, so that the
-- nodes watching for revocations (revoked_at) end its live sessions.

CREATE TABLE api_keys (
	id         TEXT PRIMARY KEY,
	name       TEXT NOT NULL UNIQUE,
	user_id    TEXT NOT NULL REFERENCES users (id),
	hash       BLOB NOT NULL,
	scopes     TEXT NOT NULL, -- space-separated
	created_at INTEGER NOT NULL,
	revoked_at INTEGER
) WITHOUT ROWID;

CREATE INDEX api_keys_revoked ON api_keys (revoked_at) WHERE revoked_at IS NOT NULL;
