-- Per-room retention (retention.go at the root): a room keeps its messages
-- retention_seconds, 0 being the server's default (--retention).
--
-- The sweeper reads only what expires: rooms_retention lists the rooms
-- with a retention of their own (all a pass visits when the server keeps
-- forever), and messages_expiry holds each room's messages that are not
-- deleted yet by send time, so a room's expired ones are one range of it;
-- a tombstone leaves it.

ALTER TABLE rooms ADD COLUMN retention_seconds bigint NOT NULL DEFAULT 0 CHECK (retention_seconds >= 0);

CREATE UNIQUE INDEX rooms_retention ON rooms (id) WHERE retention_seconds > 0;

CREATE INDEX messages_expiry ON messages (room_id, sent_at, seq) WHERE deleted_at IS NULL;
