package postgres

import (
	"fmt"
	"strings"
)

// roomRet is the column list a CTE returns for a room; roomOut(alias)
// reads it back in the order scanRoom expects, with a missing room (a LEFT
// JOIN that found nothing) as zero values and an empty id.
const roomRet = `id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, direct_key, last_change, retention_seconds`

func roomOut(a string) string {
	return strings.NewReplacer("a.", a+".").Replace(`coalesce(a.id, ''), coalesce(a.kind, ''), coalesce(a.title, ''),
		coalesce(a.capacity, 0), coalesce(a.member_count, 0), coalesce(a.last_seq, 0),
		coalesce(a.last_activity_at, 'epoch'), coalesce(a.created_at, 'epoch'), coalesce(a.direct_key, ''),
		coalesce(a.last_change, 0), coalesce(a.retention_seconds, 0)`)
}

// roomEventCols are the columns of a room_events row; evRoom(a) are the
// values of its room columns from a CTE a that returned roomRet.
const roomEventCols = `room_id, n, kind, user_id, actor_id, role, read_seq, joined_at,
	title, capacity, member_count, retention_seconds, last_seq, last_change, last_activity_at, at`

func evRoom(a string) string {
	return strings.NewReplacer("a.", a+".").Replace(`a.title, a.capacity, a.member_count, a.retention_seconds, a.last_seq, a.last_change, a.last_activity_at`)
}

// msgCols are the columns scanMessage reads.
const msgCols = `id, room_id, seq, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change, reactions,
	reply_seq, reply_sender, reply_excerpt, thread, coalesce(files, '') AS files, pinned_by, pinned_at, pin_change, coalesce(mentions, '') AS mentions`

// writeQueries are the writer's statements. Each write is one statement
// that returns its outcome as one row, a logical failure (name taken, room
// full, not found) included, so that a batch of writes is sent in one
// pipeline and fails only on a real error.
type writeQueries struct {
	lockRooms, insertUser, insertToken, deleteToken, deleteTokens, createGroup, createDirect,
	join, leave, send, sendMany, markRead, begin, commit, rollback *query
	// The edits and deletions (edits.go).
	changes changeWrites
	reply   *query              // a reply (replies.go)
	people  *peopleWriteQueries // people.go
	sends   *sendBatchQueries   // a batch of sends only (sendbatch.go)
}

func newWriteQueries(m *metrics, index bool) *writeQueries {
	// A new message's vector is the indexer's (indexer.go); an edit's is
	// computed in the edit's statement.
	tsv, newTsv := tsvOf(index), tsvOf(false)
	q := &writeQueries{
		// The rooms a batch changes, locked in id order before anything
		// else: every node locks in the same order (no deadlock between
		// two batches), and every later statement of the batch reads the
		// rooms' rows, members and messages as last committed (READ
		// COMMITTED takes a snapshot per statement).
		lockRooms: &query{kind: "lock_rooms", text: `SELECT count(*) FROM
			(SELECT 1 FROM rooms WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE) AS locked`},

		// A name a deleted account holds (accounts.go) is taken too. A
		// taken id (a derived one, NewUser.ID) is a conflict like the name.
		insertUser: &query{kind: "insert_user", text: `INSERT INTO users (id, name, password_hash, created_at)
			SELECT $1::text, $2::text, $3::bytea, $4::timestamptz
			WHERE NOT EXISTS (SELECT 1 FROM name_holds WHERE name = $2::text AND until > $4::timestamptz)
			ON CONFLICT DO NOTHING RETURNING id`},

		// $1 hash, $2 user, $3 created, $4 expires. A deleted account
		// (accounts.go: renamed, its row kept) is not found, here and by
		// createGroup and createDirect: no token or room is made for it.
		insertToken: &query{kind: "insert_token", text: `WITH u AS (SELECT id FROM users WHERE id = $2 AND NOT starts_with(name, 'deleted-user:')),
			t AS (INSERT INTO tokens (hash, user_id, created_at, expires_at) SELECT $1, u.id, $3, $4 FROM u
				ON CONFLICT (hash) DO NOTHING RETURNING 1)
			SELECT EXISTS (SELECT 1 FROM u), EXISTS (SELECT 1 FROM t)`},

		// $1 hash, or $1 user: one row either way, the number deleted. either way: how many were deleted.
		deleteToken: &query{kind: "delete_token", text: `WITH d AS (DELETE FROM tokens WHERE hash = $1 RETURNING 1)
			SELECT count(*) FROM d`},
		deleteTokens: &query{kind: "delete_user_tokens", text: `WITH d AS (DELETE FROM tokens WHERE user_id = $1 RETURNING 1)
			SELECT count(*) FROM d`},

		// $1 id, $2 creator, $3 title, $4 capacity, $5 now.
		createGroup: &query{kind: "insert_room", text: `WITH u AS (SELECT id FROM users WHERE id = $2 AND NOT starts_with(name, 'deleted-user:')),
			r AS (INSERT INTO rooms (id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, last_event)
				SELECT $1, 'group', $3, $4, 1, 0, $5, $5, 2 FROM u RETURNING ` + roomRet + `),
			m AS (INSERT INTO members (room_id, user_id, read_seq, joined_at, role) SELECT r.id, u.id, 0, $5, 'owner' FROM r, u),
			ev AS (INSERT INTO room_events (` + roomEventCols + `)
				SELECT r.id, x.n, x.kind, x.u, '', x.role, 0, x.joined, ` + evRoom("r") + `, $5 FROM r,
					(VALUES (1::bigint, 'room.created', ''::text, '', NULL::timestamptz), (2, 'member.joined', $2, 'owner', $5)) AS x (n, kind, u, role, joined))
			SELECT EXISTS (SELECT 1 FROM r)`},

		// $1 id, $2 creator, $3 peer, $4 direct key, $5 title, $6 now.
		// Either a new room with both members, or the existing room of
		// the pair with whichever of them had left added back.
		createDirect: &query{kind: "insert_direct_room", text: `WITH c AS (SELECT EXISTS (SELECT 1 FROM users WHERE id = $2::text AND NOT starts_with(name, 'deleted-user:')) AS ok),
			p AS (SELECT EXISTS (SELECT 1 FROM users WHERE id = $3::text AND NOT starts_with(name, 'deleted-user:')) AS ok),
			old AS (SELECT ` + roomRet + ` FROM rooms WHERE direct_key = $4 FOR NO KEY UPDATE),
			new AS (INSERT INTO rooms (id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, direct_key, last_event)
				SELECT $1, 'direct', $5, 2, 2, 0, $6, $6, $4, 3 FROM c, p WHERE c.ok AND p.ok AND NOT EXISTS (SELECT 1 FROM old)
				RETURNING ` + roomRet + `),
			new_events AS (INSERT INTO room_events (` + roomEventCols + `)
				SELECT new.id, x.n, x.kind, x.u, '', x.role, 0, x.joined, ` + evRoom("new") + `, $6 FROM new,
					(VALUES (1::bigint, 'room.created', ''::text, '', NULL::timestamptz), (2, 'member.joined', $2, 'member', $6),
						(3, 'member.joined', $3, 'member', $6)) AS x (n, kind, u, role, joined)),
			new_members AS (INSERT INTO members (room_id, user_id, read_seq, joined_at)
				SELECT new.id, x.u, 0, $6 FROM new, (VALUES ($2::text), ($3::text)) AS x (u)),
			back AS (INSERT INTO members (room_id, user_id, read_seq, joined_at)
				SELECT old.id, x.u, old.last_seq, $6 FROM old, c, p, (VALUES ($2::text), ($3::text)) AS x (u)
				WHERE c.ok AND p.ok AND NOT EXISTS (SELECT 1 FROM members WHERE room_id = old.id AND user_id = x.u)
				RETURNING user_id),
			grown AS (UPDATE rooms SET member_count = member_count + (SELECT count(*) FROM back),
					last_event = last_event + (SELECT count(*) FROM back)
				WHERE id = (SELECT id FROM old) AND EXISTS (SELECT 1 FROM back)
				RETURNING ` + roomRet + `, last_event),
			-- the creator's return first, as decode reports them
			back_events AS (INSERT INTO room_events (` + roomEventCols + `)
				SELECT g.id, g.last_event - k.count + k.i, 'member.joined', k.user_id, '', 'member', g.last_seq, $6,
					g.title, g.capacity, g.member_count - k.count + k.i, g.retention_seconds, g.last_seq, g.last_change,
					g.last_activity_at, $6
				FROM grown g, (SELECT user_id, row_number() OVER (ORDER BY user_id = $3::text) AS i, count(*) OVER () AS count
					FROM back) AS k)
			SELECT c.ok, p.ok, EXISTS (SELECT 1 FROM new), ` + roomOut("old") + `,
				EXISTS (SELECT 1 FROM back WHERE user_id = $2), EXISTS (SELECT 1 FROM back WHERE user_id = $3)
			FROM c, p LEFT JOIN old ON true`},

		// $1 room, $2 user, $3 now. A new member's read position is the
		// room's last seq; a banned user is not let in.
		join: &query{kind: "join", text: `WITH r0 AS (SELECT ` + roomRet + ` FROM rooms WHERE id = $1),
			mem AS (SELECT 1 FROM members WHERE room_id = $1 AND user_id = $2),
			ban AS (SELECT 1 FROM bans WHERE room_id = $1 AND user_id = $2),
			r AS (UPDATE rooms SET member_count = member_count + 1, last_event = last_event + 1
				WHERE id = $1 AND kind = 'group' AND NOT EXISTS (SELECT 1 FROM mem) AND NOT EXISTS (SELECT 1 FROM ban)
					AND (capacity = 0 OR member_count < capacity)
				RETURNING ` + roomRet + `, last_event),
			m AS (INSERT INTO members (room_id, user_id, read_seq, joined_at) SELECT r.id, $2, r.last_seq, $3 FROM r),
			ev AS (INSERT INTO room_events (` + roomEventCols + `)
				SELECT r.id, r.last_event, 'member.joined', $2, '', 'member', r.last_seq, $3, ` + evRoom("r") + `, $3 FROM r)
			SELECT EXISTS (SELECT 1 FROM mem), ` + roomOut("r0") + `, ` + roomOut("r") + `, EXISTS (SELECT 1 FROM ban)
			FROM (VALUES (1)) AS one LEFT JOIN r0 ON true LEFT JOIN r ON true`},

		// $1 room, $2 user, $3 now. An owner's leave makes the
		// longest-standing admin, else member, the owner (heir): a second
		// room event.
		leave: &query{kind: "leave", text: `WITH r0 AS (SELECT ` + roomRet + ` FROM rooms WHERE id = $1),
			d AS (DELETE FROM members WHERE room_id = $1 AND user_id = $2 RETURNING role, read_seq, joined_at),
			heir AS (SELECT user_id FROM members WHERE room_id = $1 AND user_id <> $2
				AND EXISTS (SELECT 1 FROM d WHERE role = 'owner')
				ORDER BY role = 'admin' DESC, joined_at, user_id LIMIT 1),
			r AS (UPDATE rooms SET member_count = member_count - 1, last_event = last_event + 1 + (SELECT count(*) FROM heir)
				WHERE id = $1 AND member_count > 0 AND EXISTS (SELECT 1 FROM d)
				RETURNING ` + roomRet + `, last_event),
			h AS (UPDATE members SET role = 'owner' WHERE room_id = $1 AND user_id = (SELECT user_id FROM heir)
				RETURNING user_id, read_seq, joined_at),
			ev AS (INSERT INTO room_events (` + roomEventCols + `)
				SELECT r.id, r.last_event - (SELECT count(*) FROM heir), 'member.left', $2, '', d.role, d.read_seq, d.joined_at,
					` + evRoom("r") + `, $3::timestamptz FROM r, d
				UNION ALL
				SELECT r.id, r.last_event, 'member.role', h.user_id, '', 'owner', h.read_seq, h.joined_at, ` + evRoom("r") + `, $3::timestamptz
				FROM r, h)
			SELECT ` + roomOut("r0") + `, ` + roomOut("r") + `, coalesce((SELECT user_id FROM h), '')
			FROM (VALUES (1)) AS one LEFT JOIN r0 ON true LEFT JOIN r ON true`},

		// $1 room, $2 sender, $3 sender name ('' to look it up), $4 body,
		// $5 client id, $6 message id, $7 now. A repeated client id
		// returns the original (old); otherwise, for a member, the
		// room's next seq, the message and the sender's read position,
		// in one statement.
		send: &query{kind: "send", text: `WITH old AS (SELECT id, seq, sender_name, body, sent_at, edited_at, deleted_at, change, files FROM messages
				WHERE room_id = $1 AND sender_id = $2 AND client_id = $5 AND client_id <> '' AND $5 <> ''),
			who AS (SELECT CASE WHEN $3 = '' THEN name ELSE $3 END AS name FROM users WHERE id = $2),
			mem AS (SELECT 1 FROM members WHERE room_id = $1 AND user_id = $2),
			r AS (UPDATE rooms SET last_seq = last_seq + 1, last_activity_at = greatest(last_activity_at, $7)
				WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM old) AND EXISTS (SELECT 1 FROM who) AND EXISTS (SELECT 1 FROM mem)
				RETURNING ` + roomRet + `),
			m AS (INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, tsv, files, mentions)
				SELECT r.id, r.last_seq, $6, $2, who.name, $4, $5, $7, ` + newTsv("$4") + `, nullif($8::text, ''), nullif($9::text, '') FROM r, who),
			rd AS (UPDATE members SET read_seq = r.last_seq FROM r
				WHERE members.room_id = $1 AND members.user_id = $2 AND members.read_seq < r.last_seq)
			SELECT EXISTS (SELECT 1 FROM who), EXISTS (SELECT 1 FROM rooms WHERE id = $1), EXISTS (SELECT 1 FROM mem),
				coalesce((SELECT name FROM who), ''),
				coalesce(old.id, ''), coalesce(old.seq, 0), coalesce(old.sender_name, ''), coalesce(old.body, ''),
				coalesce(old.sent_at, 'epoch'), old.edited_at, old.deleted_at, coalesce(old.change, 0), coalesce(old.files, ''), ` + roomOut("r") + `
			FROM (VALUES (1)) AS one LEFT JOIN old ON true LEFT JOIN r ON true`},

		// Many sends in one statement, for a run of sends in a batch: the
		// arrays $1 rooms, $2 senders, $3 sender names ('' to look them
		// up), $4 bodies, $5 client ids, $6 message ids, $7 times. Each
		// row of the result is one send, in order (ord): whether its
		// sender and room exist and the sender is a member, its new seq
		// and sender name, or the
		// original of a repeated client id, and its room as it stood
		// before the statement. A repeat of a client id within the
		// statement (nth > 1) gets no seq: the writer returns the first.
		sendMany: &query{kind: "send_batch", text: `WITH input AS (SELECT * FROM
				unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::text[], $9::text[])
				WITH ORDINALITY AS t (room_id, sender_id, sender_name, body, client_id, id, sent_at, files, mentions, ord)),
			checked AS (SELECT i.*, u.name AS user_name, r.id IS NOT NULL AS room_ok,
					EXISTS (SELECT 1 FROM members mm WHERE mm.room_id = i.room_id AND mm.user_id = i.sender_id) AS member_ok,
					o.id AS old_id, o.seq AS old_seq, o.sender_name AS old_name, o.body AS old_body, o.sent_at AS old_sent_at,
					o.edited_at AS old_edited_at, o.deleted_at AS old_deleted_at, o.change AS old_change, o.files AS old_files,
					CASE WHEN i.client_id = '' THEN 1
						ELSE row_number() OVER (PARTITION BY i.room_id, i.sender_id, i.client_id ORDER BY i.ord) END AS nth
				FROM input i
				LEFT JOIN users u ON u.id = i.sender_id
				LEFT JOIN rooms r ON r.id = i.room_id
				LEFT JOIN messages o ON i.client_id <> '' AND o.room_id = i.room_id AND o.sender_id = i.sender_id
					AND o.client_id = i.client_id AND o.client_id <> ''),
			new AS (SELECT c.ord, c.room_id, c.sender_id, c.body, c.client_id, c.id, c.sent_at, c.files, c.mentions,
					r.last_seq + row_number() OVER (PARTITION BY c.room_id ORDER BY c.ord) AS seq,
					CASE WHEN c.sender_name = '' THEN c.user_name ELSE c.sender_name END AS name
				FROM checked c JOIN rooms r ON r.id = c.room_id
				WHERE c.user_name IS NOT NULL AND c.member_ok AND c.old_id IS NULL AND c.nth = 1),
			ins AS (INSERT INTO messages (room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, tsv, files, mentions)
				SELECT room_id, seq, id, sender_id, name, body, client_id, sent_at, ` + newTsv("body") + `, nullif(files, ''), nullif(mentions, '') FROM new),
			up AS (UPDATE rooms SET last_seq = n.seq, last_activity_at = greatest(rooms.last_activity_at, n.sent_at)
				FROM (SELECT room_id, max(seq) AS seq, max(sent_at) AS sent_at FROM new GROUP BY room_id) AS n
				WHERE rooms.id = n.room_id),
			rd AS (UPDATE members SET read_seq = n.seq
				FROM (SELECT room_id, sender_id, max(seq) AS seq FROM new GROUP BY room_id, sender_id) AS n
				WHERE members.room_id = n.room_id AND members.user_id = n.sender_id AND members.read_seq < n.seq)
			SELECT c.user_name IS NOT NULL, c.room_ok, c.member_ok, coalesce(n.seq, 0), coalesce(n.name, ''),
				coalesce(c.old_id, ''), coalesce(c.old_seq, 0), coalesce(c.old_name, ''), coalesce(c.old_body, ''),
				coalesce(c.old_sent_at, 'epoch'), c.old_edited_at, c.old_deleted_at, coalesce(c.old_change, 0), coalesce(c.old_files, ''), ` + roomOut("r") + `
			FROM checked c LEFT JOIN new n ON n.ord = c.ord LEFT JOIN rooms r ON r.id = c.room_id
			ORDER BY c.ord`},

		// $1 room, $2 user, $3 seq. The position moves forward only, and
		// not past the room's last seq.
		markRead: &query{kind: "mark_read", text: `WITH m0 AS (SELECT read_seq, joined_at, role FROM members WHERE room_id = $1 AND user_id = $2),
			r AS (SELECT ` + roomRet + ` FROM rooms WHERE id = $1),
			u AS (UPDATE members SET read_seq = least($3::bigint, r.last_seq) FROM r
				WHERE members.room_id = $1 AND members.user_id = $2 AND members.read_seq < least($3::bigint, r.last_seq)
				RETURNING members.read_seq)
			SELECT m0.read_seq IS NOT NULL, coalesce(m0.read_seq, 0), coalesce(m0.joined_at, 'epoch'),
				coalesce(u.read_seq, -1), ` + roomOut("r") + `, coalesce(m0.role, '')
			FROM (VALUES (1)) AS one LEFT JOIN m0 ON true LEFT JOIN u ON true LEFT JOIN r ON true`},

		// Counted only: pgx sends these itself.
		begin:    &query{kind: "begin"},
		commit:   &query{kind: "commit"},
		rollback: &query{kind: "rollback"},
	}
	bind(m, q.lockRooms, q.insertUser, q.insertToken, q.deleteToken, q.deleteTokens, q.createGroup, q.createDirect,
		q.join, q.leave, q.send, q.sendMany, q.markRead, q.begin, q.commit, q.rollback)
	q.changes = newChangeWrites(m, tsv)
	q.reply = newReplyQuery(m, newTsv)
	q.people = newPeopleWriteQueries(m)
	q.sends = newSendBatchQueries(m, newTsv)
	return q
}

// readQueries are the readers' statements, run on the pool.
type readQueries struct {
	ping, userByName, user, tokenUser, room, roomExists,
	member, members, memberships,
	messagesBefore, messagesAfter, roomsFirst, roomsAfter *query
	senderRooms *query             // the rooms a user wrote in (accounts.go)
	changes     changeReads        // changed_after (edits.go)
	reactions   reactionReads      // reactions.go
	pins        *query             // a room's pin list (pins.go)
	thread      *query             // a root's replies (replies.go)
	search      searchReads        // search.go
	people      *peopleReadQueries // people.go
}

// roomListQuery is the room list: it walks the members_user index for the
// user, looks each room up by its key, sorts those rooms by activity and
// joins each room's last message by its key (room_id, seq = last_seq),
// and counts the page's unread mentions of the member (mentions.go: a
// subquery, evaluated after the limit).
var roomListQuery = `SELECT ` + roomOut("r") + `, m.read_seq,
		coalesce(g.id, ''), coalesce(g.sender_id, ''), coalesce(g.sender_name, ''), coalesce(g.body, ''),
		coalesce(g.client_id, ''), coalesce(g.sent_at, 'epoch'), g.edited_at, g.deleted_at, coalesce(g.change, 0), coalesce(g.reactions, ''), coalesce(g.files, ''), coalesce(g.mentions, ''),
		m.notify, ` + unreadMentions + `
	FROM members m
	JOIN rooms r ON r.id = m.room_id
	LEFT JOIN messages g ON g.room_id = r.id AND g.seq = r.last_seq
	WHERE m.user_id = $1 %s
	ORDER BY r.last_activity_at DESC, r.id DESC
	LIMIT $2`

func newReadQueries(m *metrics) *readQueries {
	q := &readQueries{
		ping:       &query{kind: "ping", text: `SELECT 1`},
		userByName: &query{kind: "user_by_name", text: `SELECT id, name, password_hash, created_at FROM users WHERE name = $1`},
		user:       &query{kind: "user", text: `SELECT id, name, created_at FROM users WHERE id = $1`},
		tokenUser: &query{kind: "token_user", text: `SELECT t.user_id, t.created_at, t.expires_at, u.name, u.created_at
			FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = $1`},
		room:        &query{kind: "room", text: `SELECT ` + roomOut("rooms") + ` FROM rooms WHERE id = $1`},
		roomExists:  &query{kind: "room_exists", text: `SELECT 1 FROM rooms WHERE id = $1`},
		member:      &query{kind: "member", text: `SELECT read_seq, joined_at, role FROM members WHERE room_id = $1 AND user_id = $2`},
		members:     &query{kind: "members", text: `SELECT user_id FROM members WHERE room_id = $1`},
		memberships: &query{kind: "memberships", text: `SELECT room_id, read_seq, joined_at, role FROM members WHERE user_id = $1`},
		senderRooms: &query{kind: "sender_rooms", text: `SELECT DISTINCT room_id FROM messages WHERE sender_id = $1`},
		messagesBefore: &query{kind: "messages_before", text: `SELECT ` + msgCols + ` FROM messages
			WHERE room_id = $1 AND seq < $2 ORDER BY seq DESC LIMIT $3`},
		messagesAfter: &query{kind: "messages_after", text: `SELECT ` + msgCols + ` FROM messages
			WHERE room_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`},
		roomsFirst: &query{kind: "rooms", text: fmt.Sprintf(roomListQuery, "")},
		roomsAfter: &query{kind: "rooms", text: fmt.Sprintf(roomListQuery, "AND (r.last_activity_at, r.id) < ($3, $4)")},
	}
	bind(m, q.senderRooms)
	bind(m, q.ping, q.userByName, q.user, q.tokenUser, q.room, q.roomExists, q.member, q.members,
		q.memberships, q.messagesBefore, q.messagesAfter, q.roomsFirst, q.roomsAfter)
	q.changes = newChangeReads(m)
	q.reactions = newReactionReads(m)
	q.pins = newPinsQuery(m)
	q.thread = &query{kind: "replies", text: `SELECT ` + msgCols + ` FROM messages
		WHERE room_id = $1 AND reply_seq = $2 AND seq > $3 AND reply_seq > 0 ORDER BY seq LIMIT $4`}
	bind(m, q.thread)
	q.search = newSearchReads(m)
	q.people = newPeopleReadQueries(m)
	return q
}
