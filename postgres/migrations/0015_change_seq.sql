-- Where a message's last change fell among its room's messages: the
-- room's last_seq when the change committed, set with change by every
-- edit, deletion, reaction, pin, thread summary and rename. A webhook
-- delivers the change after that message and before the next (it went by
-- time before). 0 for the changes made before this migration and for
-- imported ones: those still go by time.

ALTER TABLE messages ADD COLUMN change_seq bigint NOT NULL DEFAULT 0;
