package sqlite

import (
	"fmt"
	"strings"
)

// writeQueries are the writer's statements, prepared on its connection.
type writeQueries struct {
	userName, liveUser, insertUser, insertToken, deleteToken, deleteTokens,
	room, roomByDirectKey, insertRoom,
	member, insertMember, deleteMember, joinCount, leaveCount,
	markRead,
	begin, commit, rollback *query
	people peopleWriteQueries // people.go
	// Account deletion (accounts.go).
	accounts accountWriteQueries
	// Server API keys (apikeys.go).
	apiKeys apiKeyWriteQueries
	// The grouped statements of Send, one per chunk size (chunkSizes).
	clientMessages, senderMembers, nextSeqs, insertMessages, senderReads [len(chunkSizes)]*query
	// The edits, deletions and the full-text index (edits.go, search.go).
	changes changeWrites
}

// chunkSizes are the row counts of the grouped statements: a group of n
// rows runs as the chunks of n's binary representation (at most 64 rows a
// statement), so that every statement is prepared once, at Open.
var chunkSizes = [...]int{64, 32, 16, 8, 4, 2, 1}

// values returns "(?, ?, ?), (?, ?, ?)": rows tuples of cols parameters.
func values(rows, cols int) string {
	tuple := "(?" + strings.Repeat(", ?", cols-1) + ")"
	return tuple + strings.Repeat(", "+tuple, rows-1)
}

func (q *writeQueries) all() []*query {
	if q.room == nil {
		*q = writeQueries{
			userName: &query{kind: "user_name", text: `SELECT name FROM users WHERE id = ?`},
			// A deleted account keeps its row, renamed (accounts.go).
			liveUser:        &query{kind: "live_user", text: `SELECT 1 FROM users WHERE id = ? AND substr(name, 1, 13) != 'deleted-user:'`},
			insertUser:      &query{kind: "insert_user", text: `INSERT INTO users (id, name, password_hash, created_at) VALUES (?, ?, ?, ?)`},
			insertToken:     &query{kind: "insert_token", text: `INSERT INTO tokens (hash, user_id, created_at, expires_at) VALUES (?, ?, ?, ?)`},
			deleteToken:     &query{kind: "delete_token", text: `DELETE FROM tokens WHERE hash = ?`},
			deleteTokens:    &query{kind: "delete_user_tokens", text: `DELETE FROM tokens WHERE user_id = ?`},
			room:            &query{kind: "room", text: `SELECT ` + roomCols + ` FROM rooms WHERE id = ?`},
			roomByDirectKey: &query{kind: "room_by_direct_key", text: `SELECT ` + roomCols + ` FROM rooms WHERE direct_key = ?`},
			insertRoom: &query{kind: "insert_room", text: `INSERT INTO rooms
				(id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, direct_key, num)
				VALUES (?, ?, ?, ?, ?, 0, ?, ?, nullif(?, ''), (SELECT coalesce(max(num), 0) + 1 FROM rooms))`},
			member:       &query{kind: "member", text: `SELECT read_seq, joined_at, role FROM members WHERE room_id = ? AND user_id = ?`},
			insertMember: &query{kind: "insert_member", text: `INSERT INTO members (room_id, user_id, read_seq, joined_at, role) VALUES (?, ?, ?, ?, ?)`},
			deleteMember: &query{kind: "delete_member", text: `DELETE FROM members WHERE room_id = ? AND user_id = ? RETURNING role, read_seq, joined_at`},
			joinCount: &query{kind: "join_count", text: `UPDATE rooms SET member_count = member_count + 1
				WHERE id = ? AND (capacity = 0 OR member_count < capacity) RETURNING ` + roomCols},
			leaveCount: &query{kind: "leave_count", text: `UPDATE rooms SET member_count = member_count - 1
				WHERE id = ? AND member_count > 0 RETURNING ` + roomCols},
			markRead: &query{kind: "mark_read", text: `UPDATE members SET read_seq = min(?3, (SELECT last_seq FROM rooms WHERE id = ?1))
				WHERE room_id = ?1 AND user_id = ?2 AND read_seq < min(?3, (SELECT last_seq FROM rooms WHERE id = ?1))
				RETURNING read_seq, joined_at, role`},
			// Counted only: database/sql issues these itself.
			begin:    &query{kind: "begin"},
			commit:   &query{kind: "commit"},
			rollback: &query{kind: "rollback"},
		}
		for i, n := range chunkSizes {
			// The stored messages of (room, sender, client_id) keys,
			// through messages_client (its WHERE is in the join).
			q.clientMessages[i] = &query{kind: "message_by_client_id", text: `SELECT ` + msgColsOf("m") + `
				FROM (VALUES ` + values(n, 3) + `) AS v
				JOIN messages m ON m.room_id = v.column1 AND m.sender_id = v.column2 AND m.client_id = v.column3
					AND m.client_id <> ''`}
			// Each (room, sender) once: the pairs that are memberships.
			q.senderMembers[i] = &query{kind: "sender_member", text: `SELECT v.column1, v.column2
				FROM (VALUES ` + values(n, 2) + `) AS v
				JOIN members ON members.room_id = v.column1 AND members.user_id = v.column2`}
			// Each room once: its seq moves by the number of its messages.
			q.nextSeqs[i] = &query{kind: "next_seq", text: `UPDATE rooms
				SET last_seq = last_seq + v.column2, last_activity_at = max(last_activity_at, v.column3)
				FROM (VALUES ` + values(n, 3) + `) AS v WHERE rooms.id = v.column1 RETURNING ` + roomCols + `, num`}
			q.insertMessages[i] = &query{kind: "insert_message", text: `INSERT INTO messages
				(id, room_id, seq, sender_id, sender_name, body, client_id, sent_at, files, mentions) VALUES ` + values(n, 10)}
			// Each (room, sender) once, with the sender's last seq.
			q.senderReads[i] = &query{kind: "sender_read", text: `UPDATE members SET read_seq = v.column3
				FROM (VALUES ` + values(n, 3) + `) AS v
				WHERE members.room_id = v.column1 AND members.user_id = v.column2 AND members.read_seq < v.column3`}
		}
	}
	qs := []*query{q.userName, q.liveUser, q.insertUser, q.insertToken, q.deleteToken, q.deleteTokens, q.room, q.roomByDirectKey, q.insertRoom,
		q.member, q.insertMember, q.deleteMember, q.joinCount, q.leaveCount,
		q.markRead, q.begin, q.commit, q.rollback}
	qs = append(qs, q.people.all()...)
	qs = append(qs, q.accounts.all()...)
	qs = append(qs, q.apiKeys.all()...)
	qs = append(qs, q.clientMessages[:]...)
	qs = append(qs, q.senderMembers[:]...)
	qs = append(qs, q.nextSeqs[:]...)
	qs = append(qs, q.insertMessages[:]...)
	qs = append(qs, q.senderReads[:]...)
	return append(qs, q.changes.all()...)
}

// readQueries are the readers' statements, prepared on the reader pool.
type readQueries struct {
	ping, userByName, user, tokenUser, room, roomExists,
	member, members, memberships,
	messagesBefore, messagesAfter, roomsFirst, roomsAfter *query
	// The rooms a user wrote in (accounts.go).
	senderRooms *query
	// Server API keys (apikeys.go).
	apiKeys apiKeyReadQueries
	// changed_after and search (edits.go, search.go).
	changes changeReads
	people  peopleReadQueries // people.go
	// A room's pin list (pins.go).
	pins *query
}

// roomListQuery is the room list: it walks the members_user index for the
// user, looks each room up by its key, sorts those rooms by activity, keeps
// one page, and joins each room's last message by its key (room_id,
// last_seq). Nothing scans messages but the page's unread mentions of the
// member (mentions.go), through the partial index messages_mentions.
const roomListQuery = `SELECT p.id, p.kind, p.title, p.capacity, p.member_count, p.last_seq, p.last_activity_at,
		p.created_at, p.direct_key, p.last_change, p.retention_seconds, p.read_seq,
		coalesce(g.id, ''), coalesce(g.sender_id, ''), coalesce(g.sender_name, ''), coalesce(g.body, ''),
		coalesce(g.client_id, ''), coalesce(g.sent_at, 0), g.edited_at, g.deleted_at, coalesce(g.change, 0), coalesce(g.reactions, ''), coalesce(g.files, ''), coalesce(g.mentions, ''),
		p.notify, ` + unreadMentions + `
	FROM (
		SELECT r.id, r.kind, r.title, r.capacity, r.member_count, r.last_seq, r.last_activity_at,
			r.created_at, coalesce(r.direct_key, '') AS direct_key, r.last_change, r.retention_seconds, m.read_seq, m.notify, m.user_id
		FROM members m JOIN rooms r ON r.id = m.room_id
		WHERE m.user_id = ?1 %s
		ORDER BY r.last_activity_at DESC, r.id DESC
		LIMIT ?2
	) AS p
	LEFT JOIN messages g ON g.room_id = p.id AND g.seq = p.last_seq
	ORDER BY p.last_activity_at DESC, p.id DESC`

func (q *readQueries) all() []*query {
	if q.room == nil {
		*q = readQueries{
			ping:       &query{kind: "ping", text: `SELECT 1`},
			userByName: &query{kind: "user_by_name", text: `SELECT id, name, password_hash, created_at FROM users WHERE name = ?`},
			user:       &query{kind: "user", text: `SELECT id, name, created_at FROM users WHERE id = ?`},
			tokenUser: &query{kind: "token_user", text: `SELECT t.user_id, t.created_at, t.expires_at, u.name, u.created_at
				FROM tokens t JOIN users u ON u.id = t.user_id WHERE t.hash = ?`},
			room:        &query{kind: "room", text: `SELECT ` + roomCols + ` FROM rooms WHERE id = ?`},
			roomExists:  &query{kind: "room_exists", text: `SELECT 1 FROM rooms WHERE id = ?`},
			member:      &query{kind: "member", text: `SELECT read_seq, joined_at, role FROM members WHERE room_id = ? AND user_id = ?`},
			members:     &query{kind: "members", text: `SELECT user_id FROM members WHERE room_id = ?`},
			memberships: &query{kind: "memberships", text: `SELECT room_id, read_seq, joined_at, role FROM members WHERE user_id = ?`},
			messagesBefore: &query{kind: "messages_before", text: `SELECT ` + msgCols + ` FROM messages
				WHERE room_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?`},
			messagesAfter: &query{kind: "messages_after", text: `SELECT ` + msgCols + ` FROM messages
				WHERE room_id = ? AND seq > ? ORDER BY seq LIMIT ?`},
			roomsFirst:  &query{kind: "rooms", text: fmt.Sprintf(roomListQuery, "")},
			roomsAfter:  &query{kind: "rooms", text: fmt.Sprintf(roomListQuery, "AND (r.last_activity_at, r.id) < (?3, ?4)")},
			senderRooms: &query{kind: "sender_rooms", text: `SELECT DISTINCT room_id FROM messages WHERE sender_id = ?`},
			pins:        &query{kind: "pins", text: pinsQuery},
		}
	}
	return append([]*query{q.ping, q.userByName, q.user, q.tokenUser, q.room, q.roomExists, q.member, q.members,
		q.memberships, q.messagesBefore, q.messagesAfter, q.roomsFirst, q.roomsAfter, q.senderRooms, q.pins}, append(append(q.people.all(), q.changes.all()...), q.apiKeys.all()...)...)
}
