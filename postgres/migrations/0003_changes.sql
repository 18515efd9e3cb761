-- Message changes and search (design §3a).
--
-- Each room gets a second counter, last_change, moved by every edit and
-- deletion; each message records the change that last touched it, and when
-- it was edited or deleted (NULL until then). A deleted message is a
-- tombstone: same seq, empty body, no search vector.

ALTER TABLE rooms ADD COLUMN last_change bigint NOT NULL DEFAULT 0;

ALTER TABLE messages
	ADD COLUMN edited_at timestamptz,
	ADD COLUMN deleted_at timestamptz,
	ADD COLUMN change bigint NOT NULL DEFAULT 0,
	-- The words of the body, with the 'simple' configuration: lower-cased
	-- words, no stemming, no stop words, alike for every language. Set by
	-- the statement that stores or edits the message.
	ADD COLUMN tsv tsvector;

UPDATE messages SET tsv = to_tsvector('simple', body) WHERE body <> '';

CREATE INDEX messages_tsv ON messages USING gin (tsv);

-- changed_after walks this: only changed messages are in it.
CREATE INDEX messages_change ON messages (room_id, change) WHERE change > 0;
