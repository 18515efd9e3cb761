package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"math"
	"time"

	"parley"
)

// UserByName implements parley.Store.
func (s *Store) UserByName(ctx context.Context, name string) (parley.User, []byte, error) {
	var u parley.User
	var hash []byte
	var created int64
	s.rq.userByName.count()
	err := s.rq.userByName.stmt.QueryRowContext(ctx, name).Scan(&u.ID, &u.Name, &hash, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return u, nil, parley.Errorf(parley.CodeNotFound, "user %q not found", name)
	}
	if err != nil {
		return u, nil, s.readErr("user by name", err)
	}
	u.CreatedAt = fromMicro(created)
	return u, hash, nil
}

// User implements parley.Store.
func (s *Store) User(ctx context.Context, id string) (parley.User, error) {
	var u parley.User
	var created int64
	s.rq.user.count()
	err := s.rq.user.stmt.QueryRowContext(ctx, id).Scan(&u.ID, &u.Name, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return u, parley.Errorf(parley.CodeNotFound, "user %s not found", id)
	}
	if err != nil {
		return u, s.readErr("user", err)
	}
	u.CreatedAt = fromMicro(created)
	return u, nil
}

// TokenUser implements parley.Store. A token is valid while now is before
// its ExpiresAt.
func (s *Store) TokenUser(ctx context.Context, hash []byte, now time.Time) (parley.User, parley.Token, error) {
	t := parley.Token{Hash: hash}
	var u parley.User
	var created, expires, userCreated int64
	s.rq.tokenUser.count()
	err := s.rq.tokenUser.stmt.QueryRowContext(ctx, hash).Scan(&t.UserID, &created, &expires, &u.Name, &userCreated)
	if errors.Is(err, sql.ErrNoRows) {
		return u, t, parley.Errorf(parley.CodeUnauthorized, "unknown token")
	}
	if err != nil {
		return u, t, s.readErr("token user", err)
	}
	t.CreatedAt, t.ExpiresAt = fromMicro(created), fromMicro(expires)
	if !now.Before(t.ExpiresAt) {
		return parley.User{}, parley.Token{}, parley.Errorf(parley.CodeUnauthorized, "token expired")
	}
	u.ID, u.CreatedAt = t.UserID, fromMicro(userCreated)
	return u, t, nil
}

// Room implements parley.Store.
func (s *Store) Room(ctx context.Context, id string) (parley.Room, error) {
	s.rq.room.count()
	r, err := scanRoom(s.rq.room.stmt.QueryRowContext(ctx, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errRoomNotFound(id)
	}
	if err != nil {
		return r, s.readErr("room", err)
	}
	return r, nil
}

// roomExists fails with CodeNotFound when room id does not exist.
func (s *Store) roomExists(ctx context.Context, id string) error {
	var one int
	s.rq.roomExists.count()
	err := s.rq.roomExists.stmt.QueryRowContext(ctx, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return errRoomNotFound(id)
	}
	if err != nil {
		return s.readErr("room", err)
	}
	return nil
}

// Member implements parley.Store.
func (s *Store) Member(ctx context.Context, roomID, userID string) (parley.Member, error) {
	m := parley.Member{RoomID: roomID, UserID: userID}
	var joined int64
	s.rq.member.count()
	err := s.rq.member.stmt.QueryRowContext(ctx, roomID, userID).Scan(&m.ReadSeq, &joined, &m.Role)
	if errors.Is(err, sql.ErrNoRows) {
		return m, parley.Errorf(parley.CodeNotFound, "user %s is not a member of room %s", userID, roomID)
	}
	if err != nil {
		return m, s.readErr("member", err)
	}
	m.JoinedAt = fromMicro(joined)
	return m, nil
}

// Members implements parley.Store.
func (s *Store) Members(ctx context.Context, roomID string) ([]string, error) {
	s.rq.members.count()
	rows, err := s.rq.members.stmt.QueryContext(ctx, roomID)
	if err != nil {
		return nil, s.readErr("members", err)
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, s.readErr("members", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("members", err)
	}
	if len(ids) == 0 {
		return nil, s.roomExists(ctx, roomID)
	}
	return ids, nil
}

// Memberships implements parley.Store.
func (s *Store) Memberships(ctx context.Context, userID string) ([]parley.Member, error) {
	s.rq.memberships.count()
	rows, err := s.rq.memberships.stmt.QueryContext(ctx, userID)
	if err != nil {
		return nil, s.readErr("memberships", err)
	}
	defer rows.Close()
	var ms []parley.Member
	for rows.Next() {
		m := parley.Member{UserID: userID}
		var joined int64
		if err := rows.Scan(&m.RoomID, &m.ReadSeq, &joined, &m.Role); err != nil {
			return nil, s.readErr("memberships", err)
		}
		m.JoinedAt = fromMicro(joined)
		ms = append(ms, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("memberships", err)
	}
	return ms, nil
}

// Messages implements parley.Store. A limit out of 1..MaxPageLimit is
// clamped (0 is DefaultPageLimit).
func (s *Store) Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error) {
	limit := parley.ClampPageLimit(p.Limit)
	var q *query
	var rows *sql.Rows
	var err error
	if p.Forward() {
		q = s.rq.messagesAfter
		q.count()
		rows, err = q.stmt.QueryContext(ctx, roomID, p.After, limit)
	} else {
		before := p.Before
		if before <= 0 {
			before = math.MaxInt64
		}
		q = s.rq.messagesBefore
		q.count()
		rows, err = q.stmt.QueryContext(ctx, roomID, before, limit)
	}
	if err != nil {
		return nil, s.readErr("messages", err)
	}
	defer rows.Close()
	msgs := make([]parley.Message, 0, limit)
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			return nil, s.readErr("messages", err)
		}
		msgs = append(msgs, m)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("messages", err)
	}
	if len(msgs) == 0 {
		if err := s.roomExists(ctx, roomID); err != nil {
			return nil, err
		}
	}
	return msgs, nil
}

// Rooms implements parley.Store. A limit out of 1..MaxPageLimit is clamped
// (0 is DefaultPageLimit); a malformed cursor fails with CodeInvalid.
func (s *Store) Rooms(ctx context.Context, userID, cursor string, limit int) ([]parley.RoomEntry, string, error) {
	c, ok, err := parley.ParseRoomCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	limit = parley.ClampPageLimit(limit)
	var rows *sql.Rows
	if ok {
		s.rq.roomsAfter.count()
		rows, err = s.rq.roomsAfter.stmt.QueryContext(ctx, userID, limit+1, c.At.UnixMicro(), c.RoomID)
	} else {
		s.rq.roomsFirst.count()
		rows, err = s.rq.roomsFirst.stmt.QueryContext(ctx, userID, limit+1)
	}
	if err != nil {
		return nil, "", s.readErr("rooms", err)
	}
	defer rows.Close()
	entries := make([]parley.RoomEntry, 0, limit+1)
	for rows.Next() {
		var e parley.RoomEntry
		var at, created, readSeq, sent int64
		var edited, deleted sql.NullInt64
		var m parley.Message
		var reactions string
		dest := append(roomDest(&e.Room, &at, &created), &readSeq,
			&m.ID, &m.SenderID, &m.SenderName, &m.Body, &m.ClientID, &sent, &edited, &deleted, &m.Change, &reactions, (*string)(&m.Files), (*string)(&m.Mentions),
			&e.Notifications, &e.Mentions)
		if err := rows.Scan(dest...); err != nil {
			return nil, "", s.readErr("rooms", err)
		}
		fixRoom(&e.Room, at, created)
		e.Unread = parley.Unread(e.Room, readSeq)
		if m.ID != "" {
			m.RoomID, m.Seq, m.SentAt = e.Room.ID, e.Room.LastSeq, fromMicro(sent)
			m.EditedAt, m.DeletedAt = optMicro(edited), optMicro(deleted)
			if m.Reactions, err = parley.DecodeReactions(reactions); err != nil {
				return nil, "", s.readErr("rooms", err)
			}
			e.LastMessage = &m
		}
		entries = append(entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", s.readErr("rooms", err)
	}
	next := ""
	if len(entries) > limit {
		entries = entries[:limit]
		next = parley.CursorOf(entries[limit-1].Room).String()
	}
	return entries, next, nil
}
