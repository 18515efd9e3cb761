-- The upgrade world (parleytest/upgrade.go) as a program of schema version 16
-- stored it: as in version 15, with each room's search position (0016): its
-- indexer had come to the room's last seq.

-- Times are at(n): n s and n µs after 2026-01-01 UTC, in unix µs.

INSERT INTO users (id, name, password_hash, created_at) VALUES
	('u-alice', 'alice', x'a11ce0', 1767225600000000 + 1000001*1),
	('u-bob', 'bob', x'b0b0', 1767225600000000 + 1000001*2),
	('u-carol', 'carol', x'ca2001', 1767225600000000 + 1000001*3),
	('u-dave', 'dave', x'da7e', 1767225600000000 + 1000001*4);

INSERT INTO tokens (hash, user_id, created_at, expires_at) VALUES
	(x'70c1', 'u-alice', 1767225600000000 + 1000001*10, 4102444800000000),
	(x'70c2', 'u-bob', 1767225600000000 + 1000001*11, 1767225600000000 + 1000001*50),
	(x'70c3', 'u-bob', 1767225600000000 + 1000001*12, 4102444800000000);

INSERT INTO rooms (id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, direct_key, last_change, num) VALUES
	('r-general', 'group', 'General', 0, 3, 5, 1767225600000000 + 1000001*204, 1767225600000000 + 1000001*100, NULL, 2, 1),
	('r-small', 'group', 'Small', 3, 2, 2, 1767225600000000 + 1000001*211, 1767225600000000 + 1000001*130, NULL, 0, 2),
	('r-dm', 'direct', '', 2, 2, 2, 1767225600000000 + 1000001*221, 1767225600000000 + 1000001*160, 'u-alice:u-bob', 0, 3),
	('r-quiet', 'group', 'Quiet', 10, 1, 0, 1767225600000000 + 1000001*170, 1767225600000000 + 1000001*170, NULL, 0, 4);

INSERT INTO members (room_id, user_id, read_seq, joined_at, role) VALUES
	('r-general', 'u-alice', 5, 1767225600000000 + 1000001*100, 'owner'),
	('r-general', 'u-bob', 3, 1767225600000000 + 1000001*110, 'admin'),
	('r-general', 'u-carol', 0, 1767225600000000 + 1000001*120, 'member'),
	('r-small', 'u-bob', 2, 1767225600000000 + 1000001*130, 'owner'),
	('r-small', 'u-carol', 1, 1767225600000000 + 1000001*140, 'member'),
	('r-dm', 'u-alice', 2, 1767225600000000 + 1000001*160, 'member'),
	('r-dm', 'u-bob', 1, 1767225600000000 + 1000001*160, 'member'),
	('r-quiet', 'u-carol', 0, 1767225600000000 + 1000001*170, 'owner');

INSERT INTO bans (room_id, user_id, actor_id, banned_at) VALUES
	('r-small', 'u-dave', 'u-bob', 1767225600000000 + 1000001*150);

INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change) VALUES
	('r-general', 1, 'm-general-1', 'u-alice', 'alice', 'hello world', 'c-1', 1767225600000000 + 1000001*200, NULL, NULL, 0),
	('r-general', 2, 'm-general-2', 'u-bob', 'bob', 'plain words, nothing else', '', 1767225600000000 + 1000001*201, NULL, NULL, 0),
	('r-general', 3, 'm-general-3', 'u-carol', 'carol', 'crème brûlée für alle', 'c-3', 1767225600000000 + 1000001*202, NULL, NULL, 0),
	('r-general', 4, 'm-general-4', 'u-alice', 'alice', 'edited text', 'c-4', 1767225600000000 + 1000001*203, 1767225600000000 + 1000001*300, NULL, 1),
	('r-general', 5, 'm-general-5', 'u-bob', 'bob', '', 'c-5', 1767225600000000 + 1000001*204, NULL, 1767225600000000 + 1000001*301, 2),
	('r-small', 1, 'm-small-1', 'u-bob', 'bob', 'hello small room', 's-1', 1767225600000000 + 1000001*210, NULL, NULL, 0),
	('r-small', 2, 'm-small-2', 'u-carol', 'carol', 'a reply', '', 1767225600000000 + 1000001*211, NULL, NULL, 0),
	('r-dm', 1, 'm-dm-1', 'u-alice', 'alice', 'hello bob', 'c-1', 1767225600000000 + 1000001*220, NULL, NULL, 0),
	('r-dm', 2, 'm-dm-2', 'u-bob', 'bob', 'hi alice', 'd-2', 1767225600000000 + 1000001*221, NULL, NULL, 0);

INSERT INTO change_keys (room_id, user_id, client_id, seq, deleted, change) VALUES
	('r-general', 'u-alice', 'e-1', 4, 0, 1),
	('r-general', 'u-bob', 'k-1', 5, 1, 2);

-- The store indexed each message as it stored it; a rebuild makes the same
-- index.
INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');

INSERT INTO search_position (room_id, seq) VALUES
	('r-general', 5),
	('r-small', 2),
	('r-dm', 2),
	('r-quiet', 0);
