-- Search trails the commit (issue 33, design §5): a send no longer writes
-- the full-text entry of its messages; the indexer (indexer.go) does, in
-- batches of its own, and keeps here how far it has come in each room:
-- every message of room_id with a seq up to seq is in messages_fts (or is a
-- tombstone, which never is). It moves in the same transaction as the
-- entries it writes, so a crash loses neither and repeats neither.
--
-- Every message stored before this migration was indexed by its send: each
-- room starts at its last seq. A room with no row is at 0.

CREATE TABLE search_position (
	room_id TEXT PRIMARY KEY,
	seq     INTEGER NOT NULL
) WITHOUT ROWID;

INSERT INTO search_position (room_id, seq) SELECT id, last_seq FROM rooms;
