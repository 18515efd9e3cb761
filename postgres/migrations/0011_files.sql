-- Files and attachments (docs/files.md). A message carries its files in
-- messages.files, a JSON array of {"id","name","type","size","preview"}
-- (NULL for a message without files, so reading one costs nothing more).
-- The files table holds each upload: its uploader (for the quota), its
-- room, and the seq of the message that carries it (NULL while
-- unattached). claim is the key of the send that claimed it. The blobs
-- themselves are outside the database (an S3 bucket shared by the
-- nodes), keyed by the file's id; preview says a preview blob exists too.

ALTER TABLE messages ADD COLUMN files text;

CREATE TABLE files (
	id         text COLLATE "C" PRIMARY KEY,
	room_id    text COLLATE "C" NOT NULL,
	uploader   text COLLATE "C" NOT NULL,
	name       text NOT NULL,
	type       text NOT NULL,
	size       bigint NOT NULL,
	sha256     bytea NOT NULL,
	preview    boolean NOT NULL DEFAULT false,
	created_at timestamptz NOT NULL,
	seq        bigint,
	claim      text
);

CREATE INDEX files_uploader ON files (uploader);
CREATE INDEX files_message ON files (room_id, seq) WHERE seq IS NOT NULL;
CREATE INDEX files_unattached ON files (created_at) WHERE seq IS NULL;
