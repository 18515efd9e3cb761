-- The upgrade world (parleytest/upgrade.go) as a program of schema version 14
-- stored it: as in version 13 (0014 only added the partial index
-- messages_unindexed, empty here: every message has its vector).

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

INSERT INTO rooms (id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, direct_key, last_change) VALUES
	('r-general', 'group', 'General', 0, 3, 5, pg_temp.at(204), pg_temp.at(100), NULL, 2),
	('r-small', 'group', 'Small', 3, 2, 2, pg_temp.at(211), pg_temp.at(130), NULL, 0),
	('r-dm', 'direct', '', 2, 2, 2, pg_temp.at(221), pg_temp.at(160), 'u-alice:u-bob', 0),
	('r-quiet', 'group', 'Quiet', 10, 1, 0, pg_temp.at(170), pg_temp.at(170), NULL, 0);

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

INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change, tsv) VALUES
	('r-general', 1, 'm-general-1', 'u-alice', 'alice', 'hello world', 'c-1', pg_temp.at(200), NULL, NULL, 0, to_tsvector('simple', 'hello world')),
	('r-general', 2, 'm-general-2', 'u-bob', 'bob', 'plain words, nothing else', '', pg_temp.at(201), NULL, NULL, 0, to_tsvector('simple', 'plain words, nothing else')),
	('r-general', 3, 'm-general-3', 'u-carol', 'carol', 'crème brûlée für alle', 'c-3', pg_temp.at(202), NULL, NULL, 0, to_tsvector('simple', 'crème brûlée für alle')),
	('r-general', 4, 'm-general-4', 'u-alice', 'alice', 'edited text', 'c-4', pg_temp.at(203), pg_temp.at(300), NULL, 1, to_tsvector('simple', 'edited text')),
	('r-general', 5, 'm-general-5', 'u-bob', 'bob', '', 'c-5', pg_temp.at(204), NULL, pg_temp.at(301), 2, NULL),
	('r-small', 1, 'm-small-1', 'u-bob', 'bob', 'hello small room', 's-1', pg_temp.at(210), NULL, NULL, 0, to_tsvector('simple', 'hello small room')),
	('r-small', 2, 'm-small-2', 'u-carol', 'carol', 'a reply', '', pg_temp.at(211), NULL, NULL, 0, to_tsvector('simple', 'a reply')),
	('r-dm', 1, 'm-dm-1', 'u-alice', 'alice', 'hello bob', 'c-1', pg_temp.at(220), NULL, NULL, 0, to_tsvector('simple', 'hello bob')),
	('r-dm', 2, 'm-dm-2', 'u-bob', 'bob', 'hi alice', 'd-2', pg_temp.at(221), NULL, NULL, 0, to_tsvector('simple', 'hi alice'));

INSERT INTO change_keys (room_id, user_id, client_id, seq, deleted, change) VALUES
	('r-general', 'u-alice', 'e-1', 4, false, 1),
	('r-general', 'u-bob', 'k-1', 5, true, 2);
