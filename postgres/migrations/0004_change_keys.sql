-- Idempotency keys of message changes (design §5 for edits and deletions).
--
-- A change's client_id is kept here, by the statement that applies the
-- change, so that a repeat of it (a client resending after a lost RECEIPT,
-- to this node or another) applies nothing: one row per keyed change,
-- apart from messages, so that sends (hot) write nothing more for it and
-- changes (rare) read one row. A row holds no text: what the change did
-- (its message, edit or deletion, the change number it took) is enough to
-- tell a repeat from a reused key. The batch that writes a change has
-- locked its room first, so two nodes never apply one key twice; the
-- primary key would refuse it anyway (the batch then runs again).

CREATE TABLE change_keys (
	room_id   text COLLATE "C" NOT NULL,
	user_id   text COLLATE "C" NOT NULL,
	client_id text NOT NULL CHECK (client_id <> ''),
	seq       bigint NOT NULL,
	deleted   boolean NOT NULL, -- a deletion; an edit otherwise
	change    bigint NOT NULL,
	PRIMARY KEY (room_id, user_id, client_id)
);
