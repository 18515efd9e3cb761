-- People in a room (design §3a): each member's role, and the bans that keep
-- a user out of a group room.
--
-- The creator of a group room becomes its owner. Rooms of 0001 do not name
-- their creator, but the creator joined when the room was made, before
-- anyone else: the longest-standing member is the creator, or, when the
-- creator has left, the owner a leave makes from now on (the
-- longest-standing member; there are no admins yet).

ALTER TABLE members ADD COLUMN role TEXT NOT NULL DEFAULT 'member'
	CHECK (role IN ('owner', 'admin', 'member'));

UPDATE members SET role = 'owner'
WHERE user_id = (SELECT m.user_id FROM members m
		WHERE m.room_id = members.room_id ORDER BY m.joined_at, m.user_id LIMIT 1)
	AND EXISTS (SELECT 1 FROM rooms r WHERE r.id = members.room_id AND r.kind = 'group');

-- At most one owner per room.
CREATE UNIQUE INDEX members_owner ON members (room_id) WHERE role = 'owner';

CREATE TABLE bans (
	room_id   TEXT NOT NULL REFERENCES rooms (id),
	user_id   TEXT NOT NULL REFERENCES users (id),
	actor_id  TEXT NOT NULL REFERENCES users (id),
	banned_at INTEGER NOT NULL,
	PRIMARY KEY (room_id, user_id)
) WITHOUT ROWID;
