-- Outgoing webhooks (webhooks.go at the root, package webhook). A
-- webhook's secret is kept as given: it signs every delivery. The lease
-- (lease_owner, lease_until, lease_token) says which node delivers it;
-- lease_until is set from the database's clock, so that the nodes' clocks
-- need not agree; lease_token is the fencing token, moved by every
-- takeover.
--
-- webhook_cursors is how far a webhook has delivered each room: every
-- message with seq <= seq and every change numbered <= change. A room
-- without a row starts at 0 (a room made after the webhook); the rooms
-- that exist when a webhook is added get a row at their counters then.

CREATE TABLE webhooks (
	id            text COLLATE "C" PRIMARY KEY,
	name          text NOT NULL UNIQUE,
	url           text NOT NULL,
	secret        text NOT NULL,
	kinds         text NOT NULL, -- space-separated
	room_id       text COLLATE "C", -- NULL: every room
	created_at    timestamptz NOT NULL,
	paused_at     timestamptz,
	paused_reason text NOT NULL DEFAULT '',
	lease_owner   text NOT NULL DEFAULT '',
	lease_until   timestamptz NOT NULL DEFAULT '-infinity',
	lease_token   bigint NOT NULL DEFAULT 0
);

CREATE TABLE webhook_cursors (
	webhook_id text COLLATE "C" NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
	room_id    text COLLATE "C" NOT NULL,
	seq        bigint NOT NULL,
	change     bigint NOT NULL,
	PRIMARY KEY (webhook_id, room_id)
);
