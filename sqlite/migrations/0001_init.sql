-- Accounts, rooms, members and messages. Times are unix microseconds.

CREATE TABLE users (
	id            TEXT PRIMARY KEY,
	name          TEXT NOT NULL UNIQUE,
	password_hash BLOB NOT NULL,
	created_at    INTEGER NOT NULL
) WITHOUT ROWID;

-- Only the hash of a token's secret is kept.
CREATE TABLE tokens (
	hash       BLOB PRIMARY KEY,
	user_id    TEXT NOT NULL REFERENCES users (id),
	created_at INTEGER NOT NULL,
	expires_at INTEGER NOT NULL
) WITHOUT ROWID;

CREATE INDEX tokens_user ON tokens (user_id);

CREATE TABLE rooms (
	id               TEXT PRIMARY KEY,
	kind             TEXT NOT NULL CHECK (kind IN ('group', 'direct')),
	title            TEXT NOT NULL,
	capacity         INTEGER NOT NULL CHECK (capacity >= 0), -- 0 = unlimited
	member_count     INTEGER NOT NULL CHECK (member_count >= 0 AND (capacity = 0 OR member_count <= capacity)),
	last_seq         INTEGER NOT NULL DEFAULT 0,
	last_activity_at INTEGER NOT NULL,
	created_at       INTEGER NOT NULL,
	direct_key       TEXT -- the pair of a direct room, NULL for a group
) WITHOUT ROWID;

CREATE UNIQUE INDEX rooms_direct_key ON rooms (direct_key) WHERE direct_key IS NOT NULL;

CREATE TABLE members (
	room_id   TEXT NOT NULL REFERENCES rooms (id),
	user_id   TEXT NOT NULL REFERENCES users (id),
	read_seq  INTEGER NOT NULL,
	joined_at INTEGER NOT NULL,
	PRIMARY KEY (room_id, user_id)
) WITHOUT ROWID;

-- The room list walks this index (it holds room_id too: the primary key).
CREATE INDEX members_user ON members (user_id);

-- Clustered by (room_id, seq): a history page is one range of the table.
CREATE TABLE messages (
	room_id     TEXT NOT NULL REFERENCES rooms (id),
	seq         INTEGER NOT NULL,
	id          TEXT NOT NULL UNIQUE,
	sender_id   TEXT NOT NULL REFERENCES users (id),
	sender_name TEXT NOT NULL,
	body        TEXT NOT NULL,
	client_id   TEXT NOT NULL DEFAULT '',
	sent_at     INTEGER NOT NULL,
	PRIMARY KEY (room_id, seq)
) WITHOUT ROWID;

CREATE UNIQUE INDEX messages_client ON messages (room_id, sender_id, client_id) WHERE client_id <> '';
