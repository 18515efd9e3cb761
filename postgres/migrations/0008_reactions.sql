-- Reactions (design §3b). Each message keeps its emoji counts in one
-- column (a JSON array of {"e","n"} in first-appearance order, '' for
-- none), so every read of a message carries them at no extra cost; who
-- reacted is the message_reactions table, one row per (message, emoji,
-- user). A reaction's statement keeps both, under the room's lock.

ALTER TABLE messages ADD COLUMN reactions text NOT NULL DEFAULT '';

CREATE TABLE message_reactions (
	room_id    text NOT NULL,
	seq        bigint NOT NULL,
	emoji      text NOT NULL,
	user_id    text NOT NULL,
	created_at timestamptz NOT NULL,
	PRIMARY KEY (room_id, seq, emoji, user_id)
);

-- A user's own reactions on a page of messages (the "me" of a read) and
-- the per-user bound.
CREATE INDEX message_reactions_user ON message_reactions (room_id, user_id, seq);
