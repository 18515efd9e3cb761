-- Member and room events, stored for the outgoing webhooks (webhooks.go
-- at the root, docs/webhooks.md): each join, leave, removal, ban, role
-- change, room creation and room update writes one row in the statement
-- of the change (a data-modifying CTE branch, no extra round trip),
-- numbered from the room's last_event counter, moved by the same UPDATE
-- of the room's row that the change makes under its lock (1, 2, 3, …
-- with no holes), so that a webhook replays them in the room's order. The
-- row holds the member concerned (user_id, role, read_seq, joined_at; ''
-- for a room event), who did it (actor_id) and the room's info after the
-- change.
--
-- webhook_cursors.event is how far a webhook has delivered them. Rows
-- older than the message retention of the server are deleted by the
-- retention sweep (docs/webhooks.md, "Member and room events").

ALTER TABLE rooms ADD COLUMN last_event bigint NOT NULL DEFAULT 0;
ALTER TABLE webhook_cursors ADD COLUMN event bigint NOT NULL DEFAULT 0;

CREATE TABLE room_events (
	room_id           text COLLATE "C" NOT NULL,
	n                 bigint NOT NULL,
	kind              text NOT NULL, -- member.joined, member.left, … (parley.HookKinds)
	user_id           text COLLATE "C" NOT NULL DEFAULT '',
	actor_id          text COLLATE "C" NOT NULL DEFAULT '',
	role              text NOT NULL DEFAULT '',
	read_seq          bigint NOT NULL DEFAULT 0,
	joined_at         timestamptz,
	title             text NOT NULL,
	capacity          integer NOT NULL,
	member_count      integer NOT NULL,
	retention_seconds bigint NOT NULL,
	last_seq          bigint NOT NULL,
	last_change       bigint NOT NULL,
	last_activity_at  timestamptz NOT NULL,
	at                timestamptz NOT NULL,
	PRIMARY KEY (room_id, n)
);

CREATE INDEX room_events_at ON room_events (at);
