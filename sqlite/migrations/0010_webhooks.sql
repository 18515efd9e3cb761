-- Outgoing webhooks (webhooks.go at the root, package webhook). A
-- webhook's secret is kept as given: it signs every delivery. The lease
-- (lease_owner, lease_until, lease_token) says which node delivers it;
-- lease_token is the fencing token, moved by every takeover.
--
-- webhook_cursors is how far a webhook has delivered each room: every
-- message with seq <= seq and every change numbered <= change. A room
-- without a row starts at 0 (a room made after the webhook); the rooms
-- that exist when a webhook is added get a row at their counters then.

CREATE TABLE webhooks (
	id            TEXT PRIMARY KEY,
	name          TEXT NOT NULL UNIQUE,
	url           TEXT NOT NULL,
	secret        TEXT NOT NULL,
	kinds         TEXT NOT NULL, -- space-separated
	room_id       TEXT,          -- NULL: every room
	created_at    INTEGER NOT NULL,
	paused_at     INTEGER,
	paused_reason TEXT NOT NULL DEFAULT '',
	lease_owner   TEXT NOT NULL DEFAULT '',
	lease_until   INTEGER NOT NULL DEFAULT 0, -- unix µs
	lease_token   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

CREATE TABLE webhook_cursors (
	webhook_id TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
	room_id    TEXT NOT NULL,
	seq        INTEGER NOT NULL,
	change     INTEGER NOT NULL,
	PRIMARY KEY (webhook_id, room_id)
) WITHOUT ROWID;
