-- The upgrade world (parleytest/upgrade.go) as a program of schema version 2
-- stored it: roles and bans; no edits, tombstones or change numbers, no
-- change keys.

-- Times are at(n): n s and n µs after 2026-01-01 UTC.

CREATE FUNCTION pg_temp.at(n integer) RETURNS timestamptz
	LANGUAGE sql IMMUTABLE AS $$ SELECT '2026-01-01 00:00:00+00'::timestamptz + n * interval '1.000001 s' $$;

INSERT INTO users (id, name, password_hash, created_at) VALUES
	('u-alice', 'alice', '\xa11ce0', pg_temp.at(1)),
	('u-bob', 'bob', '\xb0b0', pg_temp.at(2)),
	('u-carol', 'carol', '\xca2001', pg_temp.at(3)),
	('u-dave', 'dave', '\xda7e', pg_temp.at(4));

INSERT INTO tokens (hash, user_id, created_at, expires_at) VALUES
	('\x70c1', 'u-alice', pg_temp.at(10), '2100-01-01 00:00:00+00'),
	('\x70c2', 'u-bob', pg_temp.at(11), pg_temp.at(50)),
	('\x70c3', 'u-bob', pg_temp.at(12), '2100-01-01 00:00:00+00');

INSERT INTO rooms (id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, direct_key) VALUES
	('r-general', 'group', 'General', 0, 3, 5, pg_temp.at(204), pg_temp.at(100), NULL),
	('r-small', 'group', 'Small', 3, 2, 2, pg_temp.at(211), pg_temp.at(130), NULL),
	('r-dm', 'direct', '', 2, 2, 2, pg_temp.at(221), pg_temp.at(160), 'u-alice:u-bob'),
	('r-quiet', 'group', 'Quiet', 10, 1, 0, pg_temp.at(170), pg_temp.at(170), NULL);

INSERT INTO members (room_id, user_id, read_seq, joined_at, role) VALUES
	('r-general', 'u-alice', 5, pg_temp.at(100), 'owner'),
	('r-general', 'u-bob', 3, pg_temp.at(110), 'admin'),
	('r-general', 'u-carol', 0, pg_temp.at(120), 'member'),
	('r-small', 'u-bob', 2, pg_temp.at(130), 'owner'),
	('r-small', 'u-carol', 1, pg_temp.at(140), 'member'),
	('r-dm', 'u-alice', 2, pg_temp.at(160), 'member'),
	('r-dm', 'u-bob', 1, pg_temp.at(160), 'member'),
	('r-quiet', 'u-carol', 0, pg_temp.at(170), 'owner');

INSERT INTO bans (room_id, user_id, actor_id, banned_at) VALUES
	('r-small', 'u-dave', 'u-bob', pg_temp.at(150));

INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at) VALUES
	('r-general', 1, 'm-general-1', 'u-alice', 'alice', 'hello world', 'c-1', pg_temp.at(200)),
	('r-general', 2, 'm-general-2', 'u-bob', 'bob', 'plain words, nothing else', '', pg_temp.at(201)),
	('r-general', 3, 'm-general-3', 'u-carol', 'carol', 'crème brûlée für alle', 'c-3', pg_temp.at(202)),
	('r-general', 4, 'm-general-4', 'u-alice', 'alice', 'edited text', 'c-4', pg_temp.at(203)),
	('r-general', 5, 'm-general-5', 'u-bob', 'bob', 'deleted soon', 'c-5', pg_temp.at(204)),
	('r-small', 1, 'm-small-1', 'u-bob', 'bob', 'hello small room', 's-1', pg_temp.at(210)),
	('r-small', 2, 'm-small-2', 'u-carol', 'carol', 'a reply', '', pg_temp.at(211)),
	('r-dm', 1, 'm-dm-1', 'u-alice', 'alice', 'hello bob', 'c-1', pg_temp.at(220)),
	('r-dm', 2, 'm-dm-2', 'u-bob', 'bob', 'hi alice', 'd-2', pg_temp.at(221));
