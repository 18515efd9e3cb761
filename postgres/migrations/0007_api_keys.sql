-- Server API keys (apikeys.go at the root): each belongs to a bot account
-- (a user whose id says it is a bot, with no password). Only the SHA-256
-- of a key's secret is kept; a revoked key keeps its row, so that the
-- nodes watching for revocations (revoked_at) end its live sessions. A
-- key with a room_id is that room's incoming webhook: it posts there only.

CREATE TABLE api_keys (
	id         text COLLATE "C" PRIMARY KEY,
	name       text NOT NULL UNIQUE,
	user_id    text COLLATE "C" NOT NULL REFERENCES users (id),
	hash       bytea NOT NULL,
	scopes     text NOT NULL, -- space-separated
	room_id    text COLLATE "C", -- NULL: every room its scopes allow
	created_at timestamptz NOT NULL,
	revoked_at timestamptz
);

CREATE INDEX api_keys_revoked ON api_keys (revoked_at) WHERE revoked_at IS NOT NULL;
