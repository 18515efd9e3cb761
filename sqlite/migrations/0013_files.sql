-- Files and attachments (docs/files.md). A message carries its files in
-- messages.files, a JSON array of {"id","name","type","size","preview"}
-- (NULL for a message without files, so reading one costs nothing more).
-- The files table holds each upload: its uploader (for the quota), its
-- room, and the seq of the message that carries it (NULL while
-- unattached). claim is the key of the send that claimed it. The blobs
-- themselves are outside the database (a directory or an S3 bucket),
-- keyed by the file's id; preview says a preview blob exists too.

ALTER TABLE messages ADD COLUMN files TEXT;

CREATE TABLE files (
	id         TEXT PRIMARY KEY,
	room_id    TEXT NOT NULL,
	uploader   TEXT NOT NULL,
	name       TEXT NOT NULL,
	type       TEXT NOT NULL,
	size       INTEGER NOT NULL,
	sha256     BLOB NOT NULL,
	preview    INTEGER NOT NULL DEFAULT 0,
	created_at INTEGER NOT NULL,
	seq        INTEGER,
	claim      TEXT
) WITHOUT ROWID;

CREATE INDEX files_uploader ON files (uploader);
CREATE INDEX files_message ON files (room_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX files_unattached ON files (created_at) WHERE seq IS NULL;
