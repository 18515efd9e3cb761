-- Idempotency keys of message changes (design §5 for edits and deletions).
--
-- A change's client_id is kept here, in the transaction that applies the
-- change, so that a repeat of it (a client resending after a lost RECEIPT)
-- applies nothing: one row per keyed change, apart from messages, so that
-- sends (hot) write nothing more for it and changes (rare) read one row. A
-- row holds no text: what the change did (its message, edit or deletion,
-- the change number it took) is enough to tell a repeat from a reused key.

CREATE TABLE change_keys (
	room_id   TEXT NOT NULL,
	user_id   TEXT NOT NULL,
	client_id TEXT NOT NULL CHECK (client_id <> ''),
	seq       INTEGER NOT NULL,
	deleted   INTEGER NOT NULL CHECK (deleted IN (0, 1)), -- 1: a deletion, 0: an edit
	change    INTEGER NOT NULL,
	PRIMARY KEY (room_id, user_id, client_id)
) WITHOUT ROWID;
