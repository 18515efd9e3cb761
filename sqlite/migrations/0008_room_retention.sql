-- Per-room retention (retention.go at the root): a room keeps its messages
-- retention_seconds, 0 being the server's default (--retention).
--
-- rooms_retention lists the rooms with a retention of their own: all a
-- sweep visits when the server keeps forever. A room's messages are read
-- in seq order (the primary key: a room's seqs are in send order), with
-- no index of their own: an index by send time cost every send a fifth
-- of its throughput (BenchmarkSendParallel), for a feature most servers
-- leave off.

ALTER TABLE rooms ADD COLUMN retention_seconds INTEGER NOT NULL DEFAULT 0 CHECK (retention_seconds >= 0);

CREATE UNIQUE INDEX rooms_retention ON rooms (id) WHERE retention_seconds > 0;
