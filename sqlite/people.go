package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"parley"
)

// People in a room: roles, the member listing, room info, removals and
// bans (parley.PeopleStore). Each write runs on the writer like every
// other, so the actor's role it checks is the one committed before it, and
// the change and the check are one transaction.

// peopleWriteQueries are the writer's statements of people.go.
type peopleWriteQueries struct {
	updateRoom, setRole, heir, banned, insertBan, deleteBan *query
}

func (q *peopleWriteQueries) all() []*query {
	if q.setRole == nil {
		*q = peopleWriteQueries{
			// ?1 room, ?2 title, ?3 capacity: never below member_count; ?4
			// retention_seconds.
			updateRoom: &query{kind: "update_room", text: `UPDATE rooms SET title = ?2, capacity = ?3, retention_seconds = ?4
				WHERE id = ?1 AND (?3 = 0 OR member_count <= ?3) RETURNING ` + roomCols},
			setRole: &query{kind: "set_role", text: `UPDATE members SET role = ? WHERE room_id = ? AND user_id = ?`},
			// The owner's heir: the longest-standing admin, else member.
			heir: &query{kind: "heir", text: `UPDATE members SET role = 'owner'
				WHERE room_id = ?1 AND user_id = (SELECT user_id FROM members WHERE room_id = ?1
					ORDER BY role = 'admin' DESC, joined_at, user_id LIMIT 1)
				RETURNING user_id, read_seq, joined_at`},
			banned:    &query{kind: "banned", text: `SELECT 1 FROM bans WHERE room_id = ? AND user_id = ?`},
			insertBan: &query{kind: "insert_ban", text: `INSERT INTO bans (room_id, user_id, actor_id, banned_at) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING`},
			deleteBan: &query{kind: "delete_ban", text: `DELETE FROM bans WHERE room_id = ? AND user_id = ?`},
		}
	}
	return []*query{q.updateRoom, q.setRole, q.heir, q.banned, q.insertBan, q.deleteBan}
}

// peopleReadQueries are the readers' statements of people.go.
type peopleReadQueries struct {
	roomMembers, bans *query
}

func (q *peopleReadQueries) all() []*query {
	if q.bans == nil {
		*q = peopleReadQueries{
			roomMembers: &query{kind: "room_members", text: `SELECT m.user_id, m.role, m.read_seq, m.joined_at, u.name
				FROM members m JOIN users u ON u.id = m.user_id WHERE m.room_id = ?`},
			bans: &query{kind: "bans", text: `SELECT b.user_id, u.name, b.actor_id, b.banned_at
				FROM bans b JOIN users u ON u.id = b.user_id WHERE b.room_id = ? ORDER BY b.banned_at DESC, b.user_id`},
		}
	}
	return []*query{q.roomMembers, q.bans}
}

// notBanned fails with CodeForbidden when the user is banned from the room.
func (w *wtx) notBanned(roomID, userID string) error {
	var one int
	err := w.row(w.s.wq.people.banned, roomID, userID).Scan(&one)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return nil
	case err != nil:
		return err
	}
	return parley.Errorf(parley.CodeForbidden, "banned from this room")
}

// removeMember deletes userID's membership of room r, if there is one, and
// emits ev (an EventLeave) with the room after it; an owner's leave passes
// the ownership on. It returns the room after it and whether userID was a
// member.
func (w *wtx) removeMember(r parley.Room, userID string, ev parley.Event) (parley.Room, bool, error) {
	m := parley.Member{RoomID: r.ID, UserID: userID}
	var joined int64
	err := w.row(w.s.wq.deleteMember, r.ID, userID).Scan(&m.Role, &m.ReadSeq, &joined)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false, nil
	}
	if err != nil {
		return r, false, err
	}
	if r, err = scanRoom(w.row(w.s.wq.leaveCount, r.ID)); err != nil {
		return r, false, err
	}
	ev.Room = r
	m.JoinedAt = fromMicro(joined)
	if err := w.record(ev, m); err != nil {
		return r, true, err
	}
	if m.Role != parley.RoleOwner {
		return r, true, nil
	}
	heir := parley.Member{RoomID: r.ID, Role: parley.RoleOwner}
	err = w.row(w.s.wq.people.heir, r.ID).Scan(&heir.UserID, &heir.ReadSeq, &joined)
	if errors.Is(err, sql.ErrNoRows) { // nobody left
		return r, true, nil
	}
	if err != nil {
		return r, true, err
	}
	heir.JoinedAt = fromMicro(joined)
	return r, true, w.record(parley.Event{Kind: parley.EventRole, Room: r, UserID: heir.UserID, Role: parley.RoleOwner}, heir)
}

// moderated returns the group room and the actor's membership, which must
// exist: CodeNotFound for an unknown room, CodeForbidden for a direct room
// or an actor who is not a member.
func (w *wtx) moderated(roomID, actorID string) (parley.Room, parley.Member, error) {
	r, err := w.room(roomID)
	if err != nil {
		return r, parley.Member{}, err
	}
	if r.Kind == parley.KindDirect {
		return r, parley.Member{}, parley.Errorf(parley.CodeForbidden, "a direct room has no moderation")
	}
	actor, ok, err := w.member(roomID, actorID)
	if err == nil && !ok {
		err = parley.Errorf(parley.CodeForbidden, "not a member of this room")
	}
	return r, actor, err
}

func errNotModerator() error {
	return parley.Errorf(parley.CodeForbidden, "only the room's owner or an admin may do this")
}

// RoomMembers implements parley.Store.
func (s *Store) RoomMembers(ctx context.Context, roomID string) ([]parley.RoomMember, error) {
	q := s.rq.people.roomMembers
	q.count()
	rows, err := q.stmt.QueryContext(ctx, roomID)
	if err != nil {
		return nil, s.readErr("room members", err)
	}
	defer rows.Close()
	var ms []parley.RoomMember
	for rows.Next() {
		m := parley.RoomMember{Member: parley.Member{RoomID: roomID}}
		var joined int64
		if err := rows.Scan(&m.UserID, &m.Role, &m.ReadSeq, &joined, &m.Name); err != nil {
			return nil, s.readErr("room members", err)
		}
		m.JoinedAt = fromMicro(joined)
		ms = append(ms, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("room members", err)
	}
	if len(ms) == 0 {
		return nil, s.roomExists(ctx, roomID)
	}
	return ms, nil
}

// Bans implements parley.Store.
func (s *Store) Bans(ctx context.Context, roomID string) ([]parley.Ban, error) {
	q := s.rq.people.bans
	q.count()
	rows, err := q.stmt.QueryContext(ctx, roomID)
	if err != nil {
		return nil, s.readErr("bans", err)
	}
	defer rows.Close()
	var bs []parley.Ban
	for rows.Next() {
		b := parley.Ban{RoomID: roomID}
		var at int64
		if err := rows.Scan(&b.UserID, &b.Name, &b.ActorID, &at); err != nil {
			return nil, s.readErr("bans", err)
		}
		b.BannedAt = fromMicro(at)
		bs = append(bs, b)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("bans", err)
	}
	if len(bs) == 0 {
		return nil, s.roomExists(ctx, roomID)
	}
	return bs, nil
}

// UpdateRoom implements parley.Store.
func (s *Store) UpdateRoom(ctx context.Context, roomID, actorID string, u parley.RoomUpdate) (parley.Room, error) {
	if err := parley.CheckRoomUpdate(u); err != nil {
		return parley.Room{}, err
	}
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		r, actor, err := w.moderated(roomID, actorID)
		if err != nil {
			return result{}, err
		}
		if !parley.MayModerate(actor.Role) {
			return result{}, errNotModerator()
		}
		want := u.Applied(r)
		if want == r {
			return result{room: r}, nil
		}
		after, err := scanRoom(w.row(w.s.wq.people.updateRoom, roomID, want.Title, want.Capacity, want.RetentionSeconds))
		if errors.Is(err, sql.ErrNoRows) {
			return result{}, parley.Errorf(parley.CodeConflict, "capacity %d is below the %d members", want.Capacity, r.MemberCount)
		}
		if err != nil {
			return result{}, fmt.Errorf("update room: %w", err)
		}
		err = w.record(parley.Event{Kind: parley.EventRoomInfo, Room: after, ActorID: actorID}, parley.Member{})
		return result{room: after}, err
	})
	return res.room, err
}

// SetRole implements parley.Store.
func (s *Store) SetRole(ctx context.Context, roomID, actorID, userID, role string) (parley.Member, error) {
	if role != parley.RoleAdmin && role != parley.RoleMember {
		return parley.Member{}, parley.Errorf(parley.CodeInvalid, "role must be %q or %q", parley.RoleAdmin, parley.RoleMember)
	}
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		r, actor, err := w.moderated(roomID, actorID)
		if err != nil {
			return result{}, err
		}
		if actor.Role != parley.RoleOwner {
			return result{}, parley.Errorf(parley.CodeForbidden, "only the room's owner may change roles")
		}
		m, ok, err := w.member(roomID, userID)
		switch {
		case err != nil:
			return result{}, err
		case !ok:
			return result{}, parley.Errorf(parley.CodeNotFound, "user %s is not a member of this room", userID)
		case m.Role == parley.RoleOwner:
			return result{}, parley.Errorf(parley.CodeForbidden, "the owner's role cannot change")
		case m.Role == role:
			return result{member: m}, nil
		}
		if _, err := w.exec(w.s.wq.people.setRole, role, roomID, userID); err != nil {
			return result{}, fmt.Errorf("set role: %w", err)
		}
		m.Role = role
		err = w.record(parley.Event{Kind: parley.EventRole, Room: r, UserID: userID, Role: role, ActorID: actorID}, m)
		return result{member: m}, err
	})
	return res.member, err
}

// RemoveMember implements parley.Store.
func (s *Store) RemoveMember(ctx context.Context, roomID, actorID, userID string, ban bool) (parley.Room, error) {
	if actorID == userID {
		return parley.Room{}, parley.Errorf(parley.CodeInvalid, "to leave a room, leave it")
	}
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		r, actor, err := w.moderated(roomID, actorID)
		if err != nil {
			return result{}, err
		}
		if !parley.MayModerate(actor.Role) {
			return result{}, errNotModerator()
		}
		m, ok, err := w.member(roomID, userID)
		switch {
		case err != nil:
			return result{}, err
		case ok && !parley.MayRemove(actor.Role, m.Role):
			return result{}, parley.Errorf(parley.CodeForbidden, "an admin may remove plain members only")
		case !ok && !ban:
			return result{}, parley.Errorf(parley.CodeNotFound, "user %s is not a member of this room", userID)
		}
		reason := parley.LeaveRemoved
		if ban {
			reason = parley.LeaveBanned
			if _, err := w.userName(userID); err != nil {
				return result{}, err
			}
			if _, err := w.exec(w.s.wq.people.insertBan, roomID, userID, actorID, w.now()); err != nil {
				return result{}, fmt.Errorf("ban: %w", err)
			}
		}
		r, _, err = w.removeMember(r, userID, parley.Event{Kind: parley.EventLeave, UserID: userID, Reason: reason, ActorID: actorID})
		if err != nil {
			return result{}, fmt.Errorf("remove member: %w", err)
		}
		return result{room: r}, nil
	})
	return res.room, err
}

// Unban implements parley.Store.
func (s *Store) Unban(ctx context.Context, roomID, actorID, userID string) error {
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		r, actor, err := w.moderated(roomID, actorID)
		if err != nil {
			return result{}, err
		}
		if !parley.MayModerate(actor.Role) {
			return result{}, errNotModerator()
		}
		res, err := w.exec(w.s.wq.people.deleteBan, roomID, userID)
		if err != nil {
			return result{}, fmt.Errorf("unban: %w", err)
		}
		if n, err := res.RowsAffected(); err != nil {
			return result{}, fmt.Errorf("unban: %w", err)
		} else if n > 0 { // a ban was lifted: the moderators' lists hear of it
			w.emit(parley.Event{Kind: parley.EventUnban, Room: r, UserID: userID, ActorID: actorID})
		}
		return result{}, nil
	})
	return err
}
