-- Deleted accounts (DELETE /api/me): a deleted user's name is held back
-- from registration until `until`, so that nobody takes it over while the
-- other members still remember it. The deleted account's row stays (its
-- messages and bans point at it) under the name 'deleted-user:' || id,
-- which no registration can ask for, and with an empty password hash,
-- which no login matches. A hold that is over is ignored, and replaced by
-- the next deletion of that name.

CREATE TABLE name_holds (
	name  text PRIMARY KEY,
	until timestamptz NOT NULL
);
