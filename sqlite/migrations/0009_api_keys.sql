-- Server API keys (apikeys.go at the root): each belongs to a bot account
-- (a user whose id says it is a bot, with no password). Only the SHA-256
-- of a key's secret is kept; a revoked key keeps its row, so that the
-- nodes watching for revocations (revoked_at) end its live sessions. A
-- key with a room_id is that room's incoming webhook: it posts there only.

CREATE TABLE api_keys (
	id         TEXT PRIMARY KEY,
	name       TEXT NOT NULL UNIQUE,
	user_id    TEXT NOT NULL REFERENCES users (id),
	hash       BLOB NOT NULL,
	scopes     TEXT NOT NULL, -- space-separated
	room_id    TEXT,          -- NULL: every room its scopes allow
	created_at INTEGER NOT NULL,
	revoked_at INTEGER
) WITHOUT ROWID;

CREATE INDEX api_keys_revoked ON api_keys (revoked_at) WHERE revoked_at IS NOT NULL;
