-- Message changes and search (design §3a).
--
-- Each room gets a second counter, last_change, moved by every edit and
-- deletion; each message records the change that last touched it, and when
-- it was edited or deleted (unix µs, NULL until then). A deleted message is
-- a tombstone: same seq, empty body.
--
-- Each room gets a number (num) too, so that a message has a 64-bit key for
-- the full-text index: num << 36 | seq (seqs below 2^36 per room).

ALTER TABLE rooms ADD COLUMN last_change INTEGER NOT NULL DEFAULT 0;
ALTER TABLE rooms ADD COLUMN num INTEGER;
UPDATE rooms SET num = x.n
	FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM rooms) AS x
	WHERE rooms.id = x.id;
CREATE UNIQUE INDEX rooms_num ON rooms (num);

ALTER TABLE messages ADD COLUMN edited_at INTEGER;
ALTER TABLE messages ADD COLUMN deleted_at INTEGER;
ALTER TABLE messages ADD COLUMN change INTEGER NOT NULL DEFAULT 0;

-- changed_after walks this: only changed messages are in it.
CREATE INDEX messages_change ON messages (room_id, change) WHERE change > 0;

-- The full-text index is an external-content FTS5 table: it keeps only the
-- index, the text stays in messages. The writer keeps it in the same
-- transaction as the message (insert, edit: delete the old text and insert
-- the new, delete: remove it), so FTS5 never reads the content view but to
-- rebuild; tombstones are not in it. A search asks only which messages
-- hold every word, never a phrase, a rank or a snippet: detail = none keeps
-- no positions and columnsize = 0 no document sizes, which halves what
-- each message costs the index.
CREATE VIEW messages_text AS
	SELECT (r.num << 36) | m.seq AS rid, m.body AS body
	FROM messages m JOIN rooms r ON r.id = m.room_id
	WHERE m.deleted_at IS NULL;

CREATE VIRTUAL TABLE messages_fts USING fts5 (
	body,
	content = 'messages_text',
	content_rowid = 'rid',
	tokenize = 'unicode61 remove_diacritics 0',
	detail = none,
	columnsize = 0
);

INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
