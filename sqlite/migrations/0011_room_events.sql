-- Member and room events, stored for the outgoing webhooks (webhooks.go
-- at the root, docs/webhooks.md): each join, leave, removal, ban, role
-- change, room creation and room update writes one row in the
-- transaction of the change, numbered from the room's last_event counter
-- (1, 2, 3, … with no holes, taken by the single writer), so that a
-- webhook replays them in the room's order after a restart. The row holds
-- the member concerned (user_id, role, read_seq, joined_at; '' for a room
-- event), who did it (actor_id) and the room's info after the change.
--
-- webhook_cursors.event is how far a webhook has delivered them. Rows
-- older than the message retention of the server are deleted by the
-- retention sweep (docs/webhooks.md, "Member and room events").

ALTER TABLE rooms ADD COLUMN last_event INTEGER NOT NULL DEFAULT 0;
ALTER TABLE webhook_cursors ADD COLUMN event INTEGER NOT NULL DEFAULT 0;

CREATE TABLE room_events (
	room_id           TEXT NOT NULL,
	n                 INTEGER NOT NULL,
	kind              TEXT NOT NULL, -- member.joined, member.left, … (parley.HookKinds)
	user_id           TEXT NOT NULL DEFAULT '',
	actor_id          TEXT NOT NULL DEFAULT '',
	role              TEXT NOT NULL DEFAULT '',
	read_seq          INTEGER NOT NULL DEFAULT 0,
	joined_at         INTEGER, -- NULL for a room event
	title             TEXT NOT NULL,
	capacity          INTEGER NOT NULL,
	member_count      INTEGER NOT NULL,
	retention_seconds INTEGER NOT NULL,
	last_seq          INTEGER NOT NULL,
	last_change       INTEGER NOT NULL,
	last_activity_at  INTEGER NOT NULL,
	at                INTEGER NOT NULL,
	PRIMARY KEY (room_id, n)
) WITHOUT ROWID;

CREATE INDEX room_events_at ON room_events (at);
