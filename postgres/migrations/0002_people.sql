-- People in a room (design §3a): each member's role, and the bans that keep
-- a user out of a group room.
--
-- The creator of a group room becomes its owner. Rooms of 0001 do not name
-- their creator, but the creator joined when the room was made, before
-- anyone else: the longest-standing member is the creator, or, when the
-- creator has left, the owner a leave makes from now on (the
-- longest-standing member; there are no admins yet).

ALTER TABLE members ADD COLUMN role text NOT NULL DEFAULT 'member'
	CHECK (role IN ('owner', 'admin', 'member'));

UPDATE members SET role = 'owner'
FROM (SELECT DISTINCT ON (m.room_id) m.room_id, m.user_id
		FROM members m JOIN rooms r ON r.id = m.room_id AND r.kind = 'group'
		ORDER BY m.room_id, m.joined_at, m.user_id) AS first
WHERE members.room_id = first.room_id AND members.user_id = first.user_id;

-- At most one owner per room.
CREATE UNIQUE INDEX members_owner ON members (room_id) WHERE role = 'owner';

CREATE TABLE bans (
	room_id   text COLLATE "C" NOT NULL REFERENCES rooms (id),
	user_id   text COLLATE "C" NOT NULL REFERENCES users (id),
	actor_id  text COLLATE "C" NOT NULL REFERENCES users (id),
	banned_at timestamptz NOT NULL,
	PRIMARY KEY (room_id, user_id)
);
