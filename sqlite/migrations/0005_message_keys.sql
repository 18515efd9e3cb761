-- Messages that cost a send less (issue 16): the table is rebuilt without
-- the unique index on id and without its foreign keys; every row, index
-- entry and full-text entry is kept as it was.
--
-- The id of a new message is derived from its key (the room's num and the
-- seq, the full-text key num << 36 | seq, as 13 base32 characters): unique
-- because the primary key (room_id, seq) is, so it needs no index of its
-- own. The ids of older messages are kept as stored: 26 characters, so
-- never equal to a derived one. Nothing looks a message up by id.
--
-- The foreign keys of room_id and sender_id are dropped: a send stores a
-- message only for a (room, sender) it has just found in members, in the
-- same transaction, whose own foreign keys hold both; rooms and users are
-- never deleted. Checking them again cost two lookups a message.
--
-- Idempotency keys stay where they were: the partial unique index
-- messages_client holds only keyed messages, and a send with a key finds
-- an earlier one through it (design §5).

DROP VIEW messages_text;

CREATE TABLE messages_new (
	room_id     TEXT NOT NULL,
	seq         INTEGER NOT NULL,
	id          TEXT NOT NULL,
	sender_id   TEXT NOT NULL,
	sender_name TEXT NOT NULL,
	body        TEXT NOT NULL,
	client_id   TEXT NOT NULL DEFAULT '',
	sent_at     INTEGER NOT NULL,
	edited_at   INTEGER,
	deleted_at  INTEGER,
	change      INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (room_id, seq)
) WITHOUT ROWID;

INSERT INTO messages_new (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change)
	SELECT room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change
	FROM messages ORDER BY room_id, seq;

DROP TABLE messages;
ALTER TABLE messages_new RENAME TO messages;

CREATE UNIQUE INDEX messages_client ON messages (room_id, sender_id, client_id) WHERE client_id <> '';
CREATE INDEX messages_change ON messages (room_id, change) WHERE change > 0;

-- As in 0003: the content of the full-text index, whose rows (and so the
-- index itself) are unchanged.
CREATE VIEW messages_text AS
	SELECT (r.num << 36) | m.seq AS rid, m.body AS body
	FROM messages m JOIN rooms r ON r.id = m.room_id
	WHERE m.deleted_at IS NULL;
