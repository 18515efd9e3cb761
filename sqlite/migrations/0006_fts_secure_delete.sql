-- Deleted means deleted (design §5): the full-text index forgets the words
-- of a deleted message, and the old words of an edited one, for good.
--
-- By default FTS5 deletes by adding a marker to a new segment and leaves the
-- words in the old one until a merge happens to rewrite it, which may be
-- never. With secure-delete (SQLite 3.44 and later; both drivers carry
-- 3.54) a delete takes the row out of the segments that hold it, at once.
-- The setting is kept in the index itself (messages_fts_config), so it is
-- set once, here; the writer connection's secure_delete pragma (conn.go)
-- zeroes the bytes the index's pages no longer hold.
--
-- Words of messages deleted before this migration stay in the old segments
-- until FTS5 merges them: the index is not rebuilt here, which would
-- rewrite all of it at start (docs/operations.md, "Deleted means deleted",
-- has the command to run offline).

INSERT INTO messages_fts (messages_fts, rank) VALUES ('secure-delete', 1);
