-- Pinned messages (design §3b). A pinned message keeps its pin in three
-- columns: who pinned it (pinned_by, '' when it is not pinned), when
-- (pinned_at, unix µs, NULL when it is not pinned) and the room's change
-- number the pin took (pin_change, 0 when it is not pinned), the order
-- of the room's pin list and its cursor. A pin needs no table of its own:
-- deleting the message clears the columns, retention removes them with
-- the row.

ALTER TABLE messages ADD COLUMN pinned_by TEXT NOT NULL DEFAULT '';
ALTER TABLE messages ADD COLUMN pinned_at INTEGER;
ALTER TABLE messages ADD COLUMN pin_change INTEGER NOT NULL DEFAULT 0;

-- A room's pins, newest first, and their count (the bound): only pinned
-- messages are in it.
CREATE INDEX messages_pins ON messages (room_id, pin_change) WHERE pin_change > 0;
