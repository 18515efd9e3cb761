package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

func errRoomNotFound(id string) error {
	return parley.Errorf(parley.CodeNotFound, "room not found")
}

// errNotMember refuses a send whose sender is not (or no longer) a member:
// the caller checked, but a leave may have committed since.
func errNotMember() error {
	return parley.Errorf(parley.CodeForbidden, "not a member of this room")
}

func errUserNotFound(id string) error {
	return parley.Errorf(parley.CodeNotFound, "user %s not found", id)
}

// CreateUser implements parley.Store.
func (s *Store) CreateUser(ctx context.Context, nu parley.NewUser) (parley.User, error) {
	if nu.Name == "" {
		return parley.User{}, parley.Errorf(parley.CodeInvalid, "empty user name")
	}
	if nu.PasswordHash == nil {
		nu.PasswordHash = []byte{}
	}
	res, err := s.write(ctx, &createUser{nu: nu})
	return res.user, err
}

type createUser struct {
	nu parley.NewUser
	u  parley.User
}

func (o *createUser) lockRoom() string { return "" }
func (o *createUser) shard() string    { return o.nu.Name }

func (o *createUser) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	o.u = parley.User{ID: o.nu.ID, Name: o.nu.Name, CreatedAt: now}
	if o.u.ID == "" {
		o.u.ID = parley.NewID()
	}
	q.insertUser.count()
	b.Queue(q.insertUser.text, o.u.ID, o.u.Name, o.nu.PasswordHash, now)
}

func (o *createUser) decode(row pgx.Row) (result, []parley.Event, error) {
	var id string
	err := row.Scan(&id)
	if errors.Is(err, pgx.ErrNoRows) { // ON CONFLICT DO NOTHING, or a held name
		if o.nu.ID != "" {
			return result{}, nil, parley.Errorf(parley.CodeConflict, "user id %s or name %q is taken", o.nu.ID, o.nu.Name)
		}
		return result{}, nil, parley.Errorf(parley.CodeNameTaken, "name %q is taken", o.nu.Name)
	}
	return result{user: o.u}, nil, err
}

// CreateToken implements parley.Store. It fails with CodeNotFound for an
// unknown user and CodeConflict for a hash stored already.
func (s *Store) CreateToken(ctx context.Context, t parley.Token) error {
	if len(t.Hash) == 0 {
		return parley.Errorf(parley.CodeInvalid, "empty token hash")
	}
	_, err := s.write(ctx, &createToken{t: t})
	return err
}

type createToken struct{ t parley.Token }

func (o *createToken) lockRoom() string { return "" }
func (o *createToken) shard() string    { return o.t.UserID }

func (o *createToken) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	created := o.t.CreatedAt
	if created.IsZero() {
		created = now
	}
	q.insertToken.count()
	b.Queue(q.insertToken.text, o.t.Hash, o.t.UserID, created, o.t.ExpiresAt)
}

func (o *createToken) decode(row pgx.Row) (result, []parley.Event, error) {
	var userOK, inserted bool
	if err := row.Scan(&userOK, &inserted); err != nil {
		return result{}, nil, err
	}
	switch {
	case !userOK:
		return result{}, nil, errUserNotFound(o.t.UserID)
	case !inserted:
		return result{}, nil, parley.Errorf(parley.CodeConflict, "token exists")
	}
	return result{}, nil, nil
}

// CreateRoom implements parley.Store. A direct room has capacity 2. Asking
// again for a direct room one of the pair has left adds them back.
func (s *Store) CreateRoom(ctx context.Context, nr parley.NewRoom) (parley.Room, bool, error) {
	switch {
	case nr.Kind != parley.KindGroup && nr.Kind != parley.KindDirect:
		return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "unknown room kind %q", nr.Kind)
	case nr.Capacity < 0:
		return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "negative capacity")
	case nr.Kind == parley.KindDirect && (nr.PeerID == "" || nr.PeerID == nr.CreatorID):
		return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "a direct room needs a peer other than its creator")
	}
	res, err := s.write(ctx, &createRoom{nr: nr, id: parley.NewID()})
	return res.room, res.ok, err
}

type createRoom struct {
	nr parley.NewRoom
	id string      // the id of a new room
	r  parley.Room // the room a new one would be
}

func (o *createRoom) lockRoom() string { return "" }

// shard is the new room's id, the writer of its later writes; a direct
// room may exist already, under another id, and its pair is the key.
func (o *createRoom) shard() string {
	if o.nr.Kind == parley.KindDirect {
		return parley.DirectKey(o.nr.CreatorID, o.nr.PeerID)
	}
	return o.id
}

// crossShard: a direct room's pair may have a room already, whose row it
// locks and whose members it may bring back, outside the room's shard.
func (o *createRoom) crossShard() bool { return o.nr.Kind == parley.KindDirect }

func (o *createRoom) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	o.r = parley.Room{ID: o.id, Kind: o.nr.Kind, Title: o.nr.Title, Capacity: o.nr.Capacity,
		MemberCount: 1, LastActivityAt: now, CreatedAt: now}
	if o.nr.Kind == parley.KindGroup {
		q.createGroup.count()
		b.Queue(q.createGroup.text, o.r.ID, o.nr.CreatorID, o.r.Title, o.r.Capacity, now)
		return
	}
	o.r.Capacity, o.r.MemberCount = 2, 2
	o.r.DirectKey = parley.DirectKey(o.nr.CreatorID, o.nr.PeerID)
	q.createDirect.count()
	b.Queue(q.createDirect.text, o.r.ID, o.nr.CreatorID, o.nr.PeerID, o.r.DirectKey, o.r.Title, now)
}

func (o *createRoom) decode(row pgx.Row) (result, []parley.Event, error) {
	if o.nr.Kind == parley.KindGroup {
		var ok bool
		if err := row.Scan(&ok); err != nil {
			return result{}, nil, err
		}
		if !ok {
			return result{}, nil, errUserNotFound(o.nr.CreatorID)
		}
		return result{room: o.r, ok: true}, []parley.Event{
			{Kind: parley.EventRoom, Room: o.r},
			{Kind: parley.EventJoin, Room: o.r, UserID: o.nr.CreatorID, Role: parley.RoleOwner},
		}, nil
	}

	var creatorOK, peerOK, created, creatorBack, peerBack bool
	var old parley.Room
	dest := append([]any{&creatorOK, &peerOK, &created}, roomDest(&old)...)
	if err := row.Scan(append(dest, &creatorBack, &peerBack)...); err != nil {
		return result{}, nil, err
	}
	fixRoom(&old)
	switch {
	case !creatorOK:
		return result{}, nil, errUserNotFound(o.nr.CreatorID)
	case !peerOK:
		return result{}, nil, errUserNotFound(o.nr.PeerID)
	case created:
		return result{room: o.r, ok: true}, []parley.Event{
			{Kind: parley.EventRoom, Room: o.r},
			{Kind: parley.EventJoin, Room: o.r, UserID: o.nr.CreatorID, Role: parley.RoleMember},
			{Kind: parley.EventJoin, Room: o.r, UserID: o.nr.PeerID, Role: parley.RoleMember},
		}, nil
	case old.ID == "":
		return result{}, nil, errors.New("create direct room: neither found nor created")
	}
	var events []parley.Event
	for _, back := range []struct {
		ok bool
		id string
	}{{creatorBack, o.nr.CreatorID}, {peerBack, o.nr.PeerID}} {
		if back.ok {
			old.MemberCount++
			events = append(events, parley.Event{Kind: parley.EventJoin, Room: old, UserID: back.id, ReadSeq: old.LastSeq, Role: parley.RoleMember})
		}
	}
	return result{room: old}, events, nil
}

// Join implements parley.Store. A new member's read position is the room's
// last seq: only later messages are unread.
func (s *Store) Join(ctx context.Context, roomID, userID string) (parley.Room, bool, error) {
	res, err := s.write(ctx, &join{roomID: roomID, userID: userID})
	return res.room, res.ok, err
}

type join struct{ roomID, userID string }

func (o *join) lockRoom() string { return o.roomID }
func (o *join) shard() string    { return o.roomID }

func (o *join) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	q.join.count()
	b.Queue(q.join.text, o.roomID, o.userID, now)
}

func (o *join) decode(row pgx.Row) (result, []parley.Event, error) {
	var member, banned bool
	var before, after parley.Room
	dest := append([]any{&member}, roomDest(&before)...)
	if err := row.Scan(append(append(dest, roomDest(&after)...), &banned)...); err != nil {
		return result{}, nil, err
	}
	fixRoom(&before)
	fixRoom(&after)
	switch {
	case before.ID == "":
		return result{}, nil, errRoomNotFound(o.roomID)
	case before.Kind == parley.KindDirect:
		return result{}, nil, parley.Errorf(parley.CodeForbidden, "a direct room cannot be joined")
	case member:
		return result{room: before}, nil, nil
	case banned:
		return result{}, nil, parley.Errorf(parley.CodeForbidden, "banned from this room")
	case after.ID == "":
		return result{}, nil, parley.Errorf(parley.CodeRoomFull, "room %s is full", o.roomID)
	}
	return result{room: after, ok: true}, []parley.Event{
		{Kind: parley.EventJoin, Room: after, UserID: o.userID, ReadSeq: after.LastSeq, Role: parley.RoleMember},
	}, nil
}

// Leave implements parley.Store.
func (s *Store) Leave(ctx context.Context, roomID, userID string) (parley.Room, error) {
	res, err := s.write(ctx, &leave{roomID: roomID, userID: userID})
	return res.room, err
}

type leave struct{ roomID, userID string }

func (o *leave) lockRoom() string { return o.roomID }
func (o *leave) shard() string    { return o.roomID }

func (o *leave) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	q.leave.count()
	b.Queue(q.leave.text, o.roomID, o.userID, now)
}

func (o *leave) decode(row pgx.Row) (result, []parley.Event, error) {
	var before, after parley.Room
	var heir string
	if err := row.Scan(append(append(roomDest(&before), roomDest(&after)...), &heir)...); err != nil {
		return result{}, nil, err
	}
	fixRoom(&before)
	fixRoom(&after)
	switch {
	case before.ID == "":
		return result{}, nil, errRoomNotFound(o.roomID)
	case after.ID == "": // not a member
		return result{room: before}, nil, nil
	}
	events := []parley.Event{{Kind: parley.EventLeave, Room: after, UserID: o.userID}}
	if heir != "" {
		events = append(events, parley.Event{Kind: parley.EventRole, Room: after, UserID: heir, Role: parley.RoleOwner})
	}
	return result{room: after}, events, nil
}

// Send implements parley.Store. Its event is one EventMessage; the sender's
// read position moves to the message's seq with it (no EventRead). It fails
// with CodeNotFound for an unknown room or sender, and with CodeForbidden
// when the sender is not a member, checked in the send's own transaction.
func (s *Store) Send(ctx context.Context, m parley.NewMessage) (parley.Message, bool, error) {
	if m.ReplyTo > 0 {
		res, err := s.write(ctx, &reply{send{m: m}}) // replies.go
		return res.msg, res.ok, err
	}
	res, err := s.write(ctx, &send{m: m})
	return res.msg, res.ok, err
}

type send struct {
	m   parley.NewMessage
	msg parley.Message // the message a new one would be
}

func (o *send) lockRoom() string { return o.m.RoomID }
func (o *send) shard() string    { return o.m.RoomID }

// setMessage makes the message a new send would store, at time now.
func (o *send) setMessage(now time.Time) {
	m := o.m
	o.msg = parley.Message{ID: parley.NewID(), RoomID: m.RoomID, SenderID: m.SenderID, SenderName: m.SenderName,
		Body: m.Body, ClientID: m.ClientID, SentAt: now, Files: m.Files, Mentions: m.Mentions}
}

func (o *send) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	o.setMessage(now)
	m := o.m
	q.send.count()
	b.Queue(q.send.text, m.RoomID, m.SenderID, m.SenderName, m.Body, m.ClientID, o.msg.ID, now, string(m.Files), string(m.Mentions))
}

func (o *send) decode(row pgx.Row) (result, []parley.Event, error) {
	var senderOK, roomOK, memberOK bool
	var name string
	old := parley.Message{RoomID: o.m.RoomID, SenderID: o.m.SenderID, ClientID: o.m.ClientID}
	var r parley.Room
	dest := append([]any{&senderOK, &roomOK, &memberOK, &name, &old.ID, &old.Seq, &old.SenderName, &old.Body, &old.SentAt,
		&old.EditedAt, &old.DeletedAt, &old.Change, (*string)(&old.Files)}, roomDest(&r)...)
	if err := row.Scan(dest...); err != nil {
		return result{}, nil, err
	}
	fixRoom(&r)
	switch {
	case old.ID != "": // a repeated client id
		fixMessage(&old)
		return result{msg: old}, nil, nil
	case !senderOK:
		return result{}, nil, errUserNotFound(o.m.SenderID)
	case !roomOK || r.ID == "" && memberOK:
		return result{}, nil, errRoomNotFound(o.m.RoomID)
	case !memberOK:
		return result{}, nil, errNotMember()
	}
	msg := o.msg
	msg.Seq, msg.SenderName = r.LastSeq, name
	return result{msg: msg, ok: true}, []parley.Event{
		{Kind: parley.EventMessage, Room: r, UserID: msg.SenderID, Message: msg},
	}, nil
}

// MarkRead implements parley.Store.
func (s *Store) MarkRead(ctx context.Context, roomID, userID string, seq int64) (parley.Member, error) {
	res, err := s.write(ctx, &markRead{roomID: roomID, userID: userID, seq: seq})
	return res.member, err
}

type markRead struct {
	roomID, userID string
	seq            int64
}

func (o *markRead) lockRoom() string { return o.roomID }
func (o *markRead) shard() string    { return o.roomID }

func (o *markRead) queue(b *pgx.Batch, q *writeQueries, _ time.Time) {
	q.markRead.count()
	b.Queue(q.markRead.text, o.roomID, o.userID, o.seq)
}

func (o *markRead) decode(row pgx.Row) (result, []parley.Event, error) {
	var member bool
	var moved int64
	var r parley.Room
	m := parley.Member{RoomID: o.roomID, UserID: o.userID}
	dest := append([]any{&member, &m.ReadSeq, &m.JoinedAt, &moved}, roomDest(&r)...)
	if err := row.Scan(append(dest, &m.Role)...); err != nil {
		return result{}, nil, err
	}
	fixRoom(&r)
	m.JoinedAt = m.JoinedAt.UTC()
	if !member {
		return result{}, nil, parley.Errorf(parley.CodeNotFound, "user %s is not a member of room %s", o.userID, o.roomID)
	}
	if moved < 0 { // at or behind the position already
		return result{member: m}, nil, nil
	}
	m.ReadSeq = moved
	return result{member: m}, []parley.Event{{Kind: parley.EventRead, Room: r, UserID: o.userID, ReadSeq: moved}}, nil
}
