package postgres

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// queryRow runs q on the pool and counts it.
func (s *Store) queryRow(ctx context.Context, q *query, args ...any) pgx.Row {
	if s.live.isDown() {
		return errRow{errNoAnswer} // refused at once (liveness.go)
	}
	q.count()
	return s.pool.QueryRow(ctx, q.text, args...)
}

// errRow is a row whose query was not sent.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

// query runs q on the pool and counts it.
func (s *Store) query(ctx context.Context, q *query, args ...any) (pgx.Rows, error) {
	if s.live.isDown() {
		return nil, errNoAnswer // refused at once (liveness.go)
	}
	q.count()
	return s.pool.Query(ctx, q.text, args...)
}

// UserByName implements parley.Store.
func (s *Store) UserByName(ctx context.Context, name string) (parley.User, []byte, error) {
	var u parley.User
	var hash []byte
	err := s.queryRow(ctx, s.rq.userByName, name).Scan(&u.ID, &u.Name, &hash, &u.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, nil, parley.Errorf(parley.CodeNotFound, "user %q not found", name)
	}
	if err != nil {
		return u, nil, s.readErr("user by name", err)
	}
	u.CreatedAt = utc(u.CreatedAt)
	return u, hash, nil
}

// User implements parley.Store.
func (s *Store) User(ctx context.Context, id string) (parley.User, error) {
	var u parley.User
	err := s.queryRow(ctx, s.rq.user, id).Scan(&u.ID, &u.Name, &u.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, errUserNotFound(id)
	}
	if err != nil {
		return u, s.readErr("user", err)
	}
	u.CreatedAt = utc(u.CreatedAt)
	return u, nil
}

// TokenUser implements parley.Store. A token is valid while now is before
// its ExpiresAt.
func (s *Store) TokenUser(ctx context.Context, hash []byte, now time.Time) (parley.User, parley.Token, error) {
	t := parley.Token{Hash: hash}
	var u parley.User
	err := s.queryRow(ctx, s.rq.tokenUser, hash).Scan(&t.UserID, &t.CreatedAt, &t.ExpiresAt, &u.Name, &u.CreatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return u, t, parley.Errorf(parley.CodeUnauthorized, "unknown token")
	}
	if err != nil {
		return u, t, s.readErr("token user", err)
	}
	t.CreatedAt, t.ExpiresAt = utc(t.CreatedAt), utc(t.ExpiresAt)
	if !now.Before(t.ExpiresAt) {
		return parley.User{}, parley.Token{}, parley.Errorf(parley.CodeUnauthorized, "token expired")
	}
	u.ID, u.CreatedAt = t.UserID, utc(u.CreatedAt)
	return u, t, nil
}

// Room implements parley.Store.
func (s *Store) Room(ctx context.Context, id string) (parley.Room, error) {
	r, err := scanRoom(s.queryRow(ctx, s.rq.room, id))
	if errors.Is(err, pgx.ErrNoRows) {
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
	err := s.queryRow(ctx, s.rq.roomExists, id).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
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
	err := s.queryRow(ctx, s.rq.member, roomID, userID).Scan(&m.ReadSeq, &m.JoinedAt, &m.Role)
	if errors.Is(err, pgx.ErrNoRows) {
		return m, parley.Errorf(parley.CodeNotFound, "user %s is not a member of room %s", userID, roomID)
	}
	if err != nil {
		return m, s.readErr("member", err)
	}
	m.JoinedAt = utc(m.JoinedAt)
	return m, nil
}

// Members implements parley.Store.
func (s *Store) Members(ctx context.Context, roomID string) ([]string, error) {
	rows, err := s.query(ctx, s.rq.members, roomID)
	if err != nil {
		return nil, s.readErr("members", err)
	}
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, s.readErr("members", err)
	}
	if len(ids) == 0 {
		return nil, s.roomExists(ctx, roomID)
	}
	return ids, nil
}

// Memberships implements parley.Store.
func (s *Store) Memberships(ctx context.Context, userID string) ([]parley.Member, error) {
	rows, err := s.query(ctx, s.rq.memberships, userID)
	if err != nil {
		return nil, s.readErr("memberships", err)
	}
	ms, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (parley.Member, error) {
		m := parley.Member{UserID: userID}
		err := row.Scan(&m.RoomID, &m.ReadSeq, &m.JoinedAt, &m.Role)
		m.JoinedAt = utc(m.JoinedAt)
		return m, err
	})
	if err != nil {
		return nil, s.readErr("memberships", err)
	}
	return ms, nil
}

// Messages implements parley.Store. A limit out of 1..MaxPageLimit is
// clamped (0 is DefaultPageLimit).
func (s *Store) Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error) {
	limit := parley.ClampPageLimit(p.Limit)
	var rows pgx.Rows
	var err error
	if p.Forward() {
		rows, err = s.query(ctx, s.rq.messagesAfter, roomID, p.After, limit)
	} else {
		before := p.Before
		if before <= 0 {
			before = math.MaxInt64
		}
		rows, err = s.query(ctx, s.rq.messagesBefore, roomID, before, limit)
	}
	if err != nil {
		return nil, s.readErr("messages", err)
	}
	msgs := make([]parley.Message, 0, limit)
	for rows.Next() {
		m, err := scanMessage(rows)
		if err != nil {
			rows.Close()
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
	var rows pgx.Rows
	if ok {
		rows, err = s.query(ctx, s.rq.roomsAfter, userID, limit+1, c.At, c.RoomID)
	} else {
		rows, err = s.query(ctx, s.rq.roomsFirst, userID, limit+1)
	}
	if err != nil {
		return nil, "", s.readErr("rooms", err)
	}
	entries := make([]parley.RoomEntry, 0, limit+1)
	for rows.Next() {
		var e parley.RoomEntry
		var readSeq int64
		var m parley.Message
		dest := append(roomDest(&e.Room), &readSeq,
			&m.ID, &m.SenderID, &m.SenderName, &m.Body, &m.ClientID, &m.SentAt, &m.EditedAt, &m.DeletedAt, &m.Change, reactionsDest{&m.Reactions}, (*string)(&m.Files), (*string)(&m.Mentions),
			&e.Notifications, &e.Mentions)
		if err := rows.Scan(dest...); err != nil {
			rows.Close()
			return nil, "", s.readErr("rooms", err)
		}
		fixRoom(&e.Room)
		e.Unread = parley.Unread(e.Room, readSeq)
		if m.ID != "" {
			m.RoomID, m.Seq = e.Room.ID, e.Room.LastSeq
			fixMessage(&m)
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
