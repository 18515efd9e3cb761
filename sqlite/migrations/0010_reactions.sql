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
