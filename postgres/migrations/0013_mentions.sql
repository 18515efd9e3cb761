-- Mentions and notification levels (design §3b, docs/api.md "Mentions").
-- A message keeps the members its text mentions in messages.mentions:
-- their user ids (and '@room' for the whole room) joined by commas, NULL
-- for none, so that a message without mentions costs nothing more. A
-- member's notification level for the room is members.notify ('all',
-- 'mentions' or 'none').

ALTER TABLE messages ADD COLUMN mentions text;
ALTER TABLE members ADD COLUMN notify text NOT NULL DEFAULT 'all';

-- The unread mentions of a member are read through this index: only the
-- messages with mentions, by room and seq.
CREATE INDEX messages_mentions ON messages (room_id, seq) WHERE mentions IS NOT NULL;
