-- Search trails the commit (issue 33, design §5): a send stores its
-- messages with no search vector (tsv NULL) and the indexer
-- (indexer.go) computes them after, in batches. This partial index holds
-- exactly the messages it has still to do, oldest first: its position is
-- each message's own state, which no transaction committing out of order
-- can make it pass (indexer.go has the argument). It is empty when
-- nothing is behind, so it costs a send one small insert.
--
-- Every message stored before this migration has its vector already (or
-- is a tombstone, or was stored with the index off for a measurement: the
-- indexer does those now).

CREATE INDEX messages_unindexed ON messages (sent_at) WHERE tsv IS NULL AND deleted_at IS NULL;
