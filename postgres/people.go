package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// People in a room: roles, the member listing, room info, removals and
// bans (parley.PeopleStore). Each write is one statement of a batch that
// has locked its room first (lockRoom), so no other node changes the
// room's members or roles while it runs, and the statement reads the
// actor's role as last committed and makes its change only if that role
// allows it. The statement returns what it found (the room, the actor's
// and the target's roles) so that decode can tell the caller why nothing
// changed.

// peopleWriteQueries are the writer's statements of people.go.
type peopleWriteQueries struct {
	updateRoom, setRole, removeMember, unban *query
}

// The room ($1) and the actor's role ($2) every moderation statement reads.
const peopleHead = `WITH r0 AS (SELECT ` + roomRet + ` FROM rooms WHERE id = $1),
	a AS (SELECT role FROM members WHERE room_id = $1 AND user_id = $2),`

func newPeopleWriteQueries(m *metrics) *peopleWriteQueries {
	q := &peopleWriteQueries{
		// $3 title or NULL, $4 capacity or NULL: never below member_count,
		// $5 retention_seconds or NULL, $6 now. Each statement that changes
		// a member or the room also stores its room event (room_events),
		// numbered by the room's last_event, moved by the same UPDATE.
		updateRoom: &query{kind: "update_room", text: peopleHead + `
			r AS (UPDATE rooms SET title = coalesce($3::text, title), capacity = coalesce($4::integer, capacity),
					retention_seconds = coalesce($5::bigint, retention_seconds), last_event = last_event + 1
				WHERE id = $1 AND kind = 'group' AND EXISTS (SELECT 1 FROM a WHERE role IN ('owner', 'admin'))
					AND (coalesce($4::integer, capacity) = 0 OR member_count <= coalesce($4::integer, capacity))
					AND (title, capacity, retention_seconds) IS DISTINCT FROM
						(coalesce($3::text, title), coalesce($4::integer, capacity), coalesce($5::bigint, retention_seconds))
				RETURNING ` + roomRet + `, last_event),
			ev AS (INSERT INTO room_events (` + roomEventCols + `)
				SELECT r.id, r.last_event, 'room.updated', '', $2, '', 0, NULL, ` + evRoom("r") + `, $6 FROM r)
			SELECT ` + roomOut("r0") + `, coalesce((SELECT role FROM a), ''), ` + roomOut("r") + `
			FROM (VALUES (1)) AS one LEFT JOIN r0 ON true LEFT JOIN r ON true`},

		// $3 the member, $4 the new role, $5 now.
		setRole: &query{kind: "set_role", text: peopleHead + `
			t AS (SELECT role, read_seq, joined_at FROM members WHERE room_id = $1 AND user_id = $3),
			u AS (UPDATE members SET role = $4 WHERE room_id = $1 AND user_id = $3
				AND EXISTS (SELECT 1 FROM r0 WHERE kind = 'group') AND EXISTS (SELECT 1 FROM a WHERE role = 'owner')
				AND EXISTS (SELECT 1 FROM t WHERE role <> 'owner' AND role <> $4)
				RETURNING 1),
			rc AS (UPDATE rooms SET last_event = last_event + 1 WHERE id = $1 AND EXISTS (SELECT 1 FROM u)
				RETURNING ` + roomRet + `, last_event),
			ev AS (INSERT INTO room_events (` + roomEventCols + `)
				SELECT rc.id, rc.last_event, 'member.role', $3, $2, $4, t.read_seq, t.joined_at, ` + evRoom("rc") + `, $5 FROM rc, t)
			SELECT ` + roomOut("r0") + `, coalesce((SELECT role FROM a), ''),
				coalesce(t.role, ''), coalesce(t.read_seq, 0), coalesce(t.joined_at, 'epoch'), EXISTS (SELECT 1 FROM u)
			FROM (VALUES (1)) AS one LEFT JOIN r0 ON true LEFT JOIN t ON true`},

		// $3 the member, $4 ban, $5 now. The owner removes anyone, an
		// admin plain members; a ban of a non-member only bans.
		removeMember: &query{kind: "remove_member", text: peopleHead + `
			t AS (SELECT role FROM members WHERE room_id = $1 AND user_id = $3),
			ok AS (SELECT 1 FROM r0 WHERE r0.kind = 'group' AND (
				EXISTS (SELECT 1 FROM a, t WHERE (a.role = 'owner' AND t.role <> 'owner') OR (a.role = 'admin' AND t.role = 'member'))
				OR ($4 AND NOT EXISTS (SELECT 1 FROM t) AND EXISTS (SELECT 1 FROM a WHERE role IN ('owner', 'admin'))
					AND EXISTS (SELECT 1 FROM users WHERE id = $3)))),
			b AS (INSERT INTO bans (room_id, user_id, actor_id, banned_at) SELECT $1, $3, $2, $5 FROM ok WHERE $4
				ON CONFLICT DO NOTHING),
			d AS (DELETE FROM members WHERE room_id = $1 AND user_id = $3 AND EXISTS (SELECT 1 FROM ok)
				RETURNING role, read_seq, joined_at),
			r AS (UPDATE rooms SET member_count = member_count - 1, last_event = last_event + 1 WHERE id = $1 AND EXISTS (SELECT 1 FROM d)
				RETURNING ` + roomRet + `, last_event),
			ev AS (INSERT INTO room_events (` + roomEventCols + `)
				SELECT r.id, r.last_event, CASE WHEN $4 THEN 'member.banned' ELSE 'member.removed' END, $3, $2,
					d.role, d.read_seq, d.joined_at, ` + evRoom("r") + `, $5 FROM r, d)
			SELECT ` + roomOut("r0") + `, coalesce((SELECT role FROM a), ''), coalesce((SELECT role FROM t), ''),
				EXISTS (SELECT 1 FROM users WHERE id = $3), ` + roomOut("r") + `
			FROM (VALUES (1)) AS one LEFT JOIN r0 ON true LEFT JOIN r ON true`},

		// $3 the banned user.
		unban: &query{kind: "unban", text: peopleHead + `
			d AS (DELETE FROM bans WHERE room_id = $1 AND user_id = $3
				AND EXISTS (SELECT 1 FROM r0 WHERE kind = 'group') AND EXISTS (SELECT 1 FROM a WHERE role IN ('owner', 'admin'))
				RETURNING 1)
			SELECT ` + roomOut("r0") + `, coalesce((SELECT role FROM a), ''), EXISTS (SELECT 1 FROM d)
			FROM (VALUES (1)) AS one LEFT JOIN r0 ON true`},
	}
	bind(m, q.updateRoom, q.setRole, q.removeMember, q.unban)
	return q
}

// peopleReadQueries are the readers' statements of people.go.
type peopleReadQueries struct {
	roomMembers, bans *query
}

func newPeopleReadQueries(m *metrics) *peopleReadQueries {
	q := &peopleReadQueries{
		roomMembers: &query{kind: "room_members", text: `SELECT m.user_id, m.role, m.read_seq, m.joined_at, u.name
			FROM members m JOIN users u ON u.id = m.user_id WHERE m.room_id = $1`},
		bans: &query{kind: "bans", text: `SELECT b.user_id, u.name, b.actor_id, b.banned_at
			FROM bans b JOIN users u ON u.id = b.user_id WHERE b.room_id = $1 ORDER BY b.banned_at DESC, b.user_id`},
	}
	bind(m, q.roomMembers, q.bans)
	return q
}

// checkActor reports why a moderation of room r by an actor with role
// actorRole ("" for no member) is refused, or nil when the actor is a
// member of the group room.
func checkActor(r parley.Room, roomID, actorRole string) error {
	switch {
	case r.ID == "":
		return errRoomNotFound(roomID)
	case r.Kind == parley.KindDirect:
		return parley.Errorf(parley.CodeForbidden, "a direct room has no moderation")
	case actorRole == "":
		return parley.Errorf(parley.CodeForbidden, "not a member of this room")
	}
	return nil
}

func errNotModerator() error {
	return parley.Errorf(parley.CodeForbidden, "only the room's owner or an admin may do this")
}

// RoomMembers implements parley.Store.
func (s *Store) RoomMembers(ctx context.Context, roomID string) ([]parley.RoomMember, error) {
	rows, err := s.query(ctx, s.rq.people.roomMembers, roomID)
	if err != nil {
		return nil, s.readErr("room members", err)
	}
	ms, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (parley.RoomMember, error) {
		m := parley.RoomMember{Member: parley.Member{RoomID: roomID}}
		err := row.Scan(&m.UserID, &m.Role, &m.ReadSeq, &m.JoinedAt, &m.Name)
		m.JoinedAt = utc(m.JoinedAt)
		return m, err
	})
	if err != nil {
		return nil, s.readErr("room members", err)
	}
	if len(ms) == 0 {
		return nil, s.roomExists(ctx, roomID)
	}
	return ms, nil
}

// Bans implements parley.Store.
func (s *Store) Bans(ctx context.Context, roomID string) ([]parley.Ban, error) {
	rows, err := s.query(ctx, s.rq.people.bans, roomID)
	if err != nil {
		return nil, s.readErr("bans", err)
	}
	bs, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (parley.Ban, error) {
		b := parley.Ban{RoomID: roomID}
		err := row.Scan(&b.UserID, &b.Name, &b.ActorID, &b.BannedAt)
		b.BannedAt = utc(b.BannedAt)
		return b, err
	})
	if err != nil {
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
	res, err := s.write(ctx, &updateRoom{roomID: roomID, actorID: actorID, u: u})
	return res.room, err
}

type updateRoom struct {
	roomID, actorID string
	u               parley.RoomUpdate
}

func (o *updateRoom) lockRoom() string { return o.roomID }
func (o *updateRoom) shard() string    { return o.roomID }

func (o *updateRoom) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	q.people.updateRoom.count()
	b.Queue(q.people.updateRoom.text, o.roomID, o.actorID, o.u.Title, o.u.Capacity, o.u.RetentionSeconds, now)
}

func (o *updateRoom) decode(row pgx.Row) (result, []parley.Event, error) {
	var before, after parley.Room
	var actor string
	dest := append(roomDest(&before), &actor)
	if err := row.Scan(append(dest, roomDest(&after)...)...); err != nil {
		return result{}, nil, err
	}
	fixRoom(&before)
	fixRoom(&after)
	if err := checkActor(before, o.roomID, actor); err != nil {
		return result{}, nil, err
	}
	if !parley.MayModerate(actor) {
		return result{}, nil, errNotModerator()
	}
	if after.ID != "" {
		return result{room: after}, []parley.Event{{Kind: parley.EventRoomInfo, Room: after, ActorID: o.actorID}}, nil
	}
	want := o.u.Applied(before)
	if want == before {
		return result{room: before}, nil, nil
	}
	return result{}, nil, parley.Errorf(parley.CodeConflict, "capacity %d is below the %d members", want.Capacity, before.MemberCount)
}

// SetRole implements parley.Store.
func (s *Store) SetRole(ctx context.Context, roomID, actorID, userID, role string) (parley.Member, error) {
	if role != parley.RoleAdmin && role != parley.RoleMember {
		return parley.Member{}, parley.Errorf(parley.CodeInvalid, "role must be %q or %q", parley.RoleAdmin, parley.RoleMember)
	}
	res, err := s.write(ctx, &setRole{roomID: roomID, actorID: actorID, userID: userID, role: role})
	return res.member, err
}

type setRole struct{ roomID, actorID, userID, role string }

func (o *setRole) lockRoom() string { return o.roomID }
func (o *setRole) shard() string    { return o.roomID }

func (o *setRole) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	q.people.setRole.count()
	b.Queue(q.people.setRole.text, o.roomID, o.actorID, o.userID, o.role, now)
}

func (o *setRole) decode(row pgx.Row) (result, []parley.Event, error) {
	var r parley.Room
	var actor string
	var changed bool
	m := parley.Member{RoomID: o.roomID, UserID: o.userID}
	dest := append(roomDest(&r), &actor, &m.Role, &m.ReadSeq, &m.JoinedAt, &changed)
	if err := row.Scan(dest...); err != nil {
		return result{}, nil, err
	}
	fixRoom(&r)
	m.JoinedAt = utc(m.JoinedAt)
	if err := checkActor(r, o.roomID, actor); err != nil {
		return result{}, nil, err
	}
	switch {
	case actor != parley.RoleOwner:
		return result{}, nil, parley.Errorf(parley.CodeForbidden, "only the room's owner may change roles")
	case m.Role == "":
		return result{}, nil, parley.Errorf(parley.CodeNotFound, "user %s is not a member of this room", o.userID)
	case m.Role == parley.RoleOwner:
		return result{}, nil, parley.Errorf(parley.CodeForbidden, "the owner's role cannot change")
	case !changed:
		return result{member: m}, nil, nil
	}
	m.Role = o.role
	return result{member: m}, []parley.Event{
		{Kind: parley.EventRole, Room: r, UserID: o.userID, Role: o.role, ActorID: o.actorID},
	}, nil
}

// RemoveMember implements parley.Store.
func (s *Store) RemoveMember(ctx context.Context, roomID, actorID, userID string, ban bool) (parley.Room, error) {
	if actorID == userID {
		return parley.Room{}, parley.Errorf(parley.CodeInvalid, "to leave a room, leave it")
	}
	res, err := s.write(ctx, &removeMember{roomID: roomID, actorID: actorID, userID: userID, ban: ban})
	return res.room, err
}

type removeMember struct {
	roomID, actorID, userID string
	ban                     bool
}

func (o *removeMember) lockRoom() string { return o.roomID }
func (o *removeMember) shard() string    { return o.roomID }

func (o *removeMember) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	q.people.removeMember.count()
	b.Queue(q.people.removeMember.text, o.roomID, o.actorID, o.userID, o.ban, now)
}

func (o *removeMember) decode(row pgx.Row) (result, []parley.Event, error) {
	var before, after parley.Room
	var actor, target string
	var userOK bool
	dest := append(roomDest(&before), &actor, &target, &userOK)
	if err := row.Scan(append(dest, roomDest(&after)...)...); err != nil {
		return result{}, nil, err
	}
	fixRoom(&before)
	fixRoom(&after)
	if err := checkActor(before, o.roomID, actor); err != nil {
		return result{}, nil, err
	}
	switch {
	case !parley.MayModerate(actor):
		return result{}, nil, errNotModerator()
	case target != "" && !parley.MayRemove(actor, target):
		return result{}, nil, parley.Errorf(parley.CodeForbidden, "an admin may remove plain members only")
	case target == "" && (!o.ban || !userOK):
		return result{}, nil, parley.Errorf(parley.CodeNotFound, "user %s is not a member of this room", o.userID)
	case target == "": // banned, not a member
		return result{room: before}, nil, nil
	case after.ID == "":
		return result{}, nil, errors.New("remove member: the statement refused what its checks allow")
	}
	reason := parley.LeaveRemoved
	if o.ban {
		reason = parley.LeaveBanned
	}
	return result{room: after}, []parley.Event{
		{Kind: parley.EventLeave, Room: after, UserID: o.userID, Reason: reason, ActorID: o.actorID},
	}, nil
}

// Unban implements parley.Store.
func (s *Store) Unban(ctx context.Context, roomID, actorID, userID string) error {
	_, err := s.write(ctx, &unban{roomID: roomID, actorID: actorID, userID: userID})
	return err
}

type unban struct{ roomID, actorID, userID string }

func (o *unban) lockRoom() string { return o.roomID }
func (o *unban) shard() string    { return o.roomID }

func (o *unban) queue(b *pgx.Batch, q *writeQueries, _ time.Time) {
	q.people.unban.count()
	b.Queue(q.people.unban.text, o.roomID, o.actorID, o.userID)
}

func (o *unban) decode(row pgx.Row) (result, []parley.Event, error) {
	var r parley.Room
	var actor string
	var lifted bool
	if err := row.Scan(append(roomDest(&r), &actor, &lifted)...); err != nil {
		return result{}, nil, err
	}
	fixRoom(&r)
	if err := checkActor(r, o.roomID, actor); err != nil {
		return result{}, nil, err
	}
	if !parley.MayModerate(actor) {
		return result{}, nil, errNotModerator()
	}
	if !lifted {
		return result{}, nil, nil
	}
	// A ban was lifted: the moderators' lists hear of it.
	return result{}, []parley.Event{{Kind: parley.EventUnban, Room: r, UserID: o.userID, ActorID: o.actorID}}, nil
}
