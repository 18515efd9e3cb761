-- Accounts, rooms, members and messages. Times are timestamptz
-- (microseconds); ids compare bytewise (COLLATE "C"), as Go compares them.

CREATE TABLE users (
	id            text COLLATE "C" PRIMARY KEY,
	name          text NOT NULL UNIQUE,
	password_hash bytea NOT NULL,
	created_at    timestamptz NOT NULL
);

-- Only the hash of a token's secret is kept.
CREATE TABLE tokens (
	hash       bytea PRIMARY KEY,
	user_id    text COLLATE "C" NOT NULL REFERENCES users (id),
	created_at timestamptz NOT NULL,
	expires_at timestamptz NOT NULL
);

CREATE INDEX tokens_user ON tokens (user_id);

-- A room row is updated by every message (last_seq, last_activity_at): the
-- free space left by the fill factor keeps those updates HOT.
CREATE TABLE rooms (
	id               text COLLATE "C" PRIMARY KEY,
	kind             text NOT NULL CHECK (kind IN ('group', 'direct')),
	title            text NOT NULL,
	capacity         integer NOT NULL CHECK (capacity >= 0), -- 0 = unlimited
	member_count     integer NOT NULL CHECK (member_count >= 0 AND (capacity = 0 OR member_count <= capacity)),
	last_seq         bigint NOT NULL DEFAULT 0,
	last_activity_at timestamptz NOT NULL,
	created_at       timestamptz NOT NULL,
	direct_key       text COLLATE "C" UNIQUE -- the pair of a direct room, NULL for a group
) WITH (fillfactor = 50);

CREATE TABLE members (
	room_id   text COLLATE "C" NOT NULL REFERENCES rooms (id),
	user_id   text COLLATE "C" NOT NULL REFERENCES users (id),
	read_seq  bigint NOT NULL,
	joined_at timestamptz NOT NULL,
	PRIMARY KEY (room_id, user_id)
) WITH (fillfactor = 70);

-- The room list walks this index.
CREATE INDEX members_user ON members (user_id) INCLUDE (room_id);

-- A history page is one range of the primary key (room_id, seq). Neither
-- the room nor the sender is a foreign key: rooms and users are never
-- deleted, and a send stores a message only for a room and a sender it has
-- found (the room locked), so the checks would only cost a row lock per
-- message. Nothing looks a message up by its id (128 random bits), so it
-- has no index: one index insert less per message.
CREATE TABLE messages (
	room_id     text COLLATE "C" NOT NULL,
	seq         bigint NOT NULL,
	id          text COLLATE "C" NOT NULL,
	sender_id   text COLLATE "C" NOT NULL,
	sender_name text NOT NULL,
	body        text NOT NULL,
	client_id   text NOT NULL DEFAULT '',
	sent_at     timestamptz NOT NULL,
	PRIMARY KEY (room_id, seq)
);

CREATE UNIQUE INDEX messages_client ON messages (room_id, sender_id, client_id) WHERE client_id <> '';
