-- Reactions (design §3b). Each message keeps its emoji counts in one
-- column (a JSON array of {"e","n"} in first-appearance order, '' for
-- none), so every read of a message carries them at no extra cost; who
-- reacted is the message_reactions table, one row per (message, emoji,
-- user). The writer keeps both in the transaction that takes the change.

ALTER TABLE messages ADD COLUMN reactions TEXT NOT NULL DEFAULT '';

CREATE TABLE message_reactions (
	room_id    TEXT NOT NULL,
	seq        INTEGER NOT NULL,
	emoji      TEXT NOT NULL,
	user_id    TEXT NOT NULL,
	created_at INTEGER NOT NULL,
	PRIMARY KEY (room_id, seq, emoji, user_id)
) WITHOUT ROWID;

-- A user's own reactions on a page of messages (the "me" of a read) and
-- the per-user bound.
CREATE INDEX message_reactions_user ON message_reactions (room_id, user_id, seq);

-- Replies and threads (design §3b). A reply keeps the seq of the root it
-- replies to (0: no reply; a reply to a reply names its root), the root's
-- sender name and an excerpt of its text (its first 100 characters,
-- rewritten when the root is edited, emptied when it is deleted). A root
-- keeps its thread's summary, a JSON object {"replies","last_reply_at",
-- "participants"} ('' until its first reply), in the reply's transaction.

ALTER TABLE messages ADD COLUMN reply_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN reply_sender TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN reply_excerpt TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN thread TEXT NOT NULL DEFAULT '';

-- A thread's replies in order, and the replies whose excerpt an edit of
-- their root rewrites: only replies are in it.
CREATE INDEX messages_thread ON messages (room_id, reply_seq, seq) WHERE reply_seq > 0;
