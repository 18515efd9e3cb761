package postgres

import (
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// roomDest returns the scan destinations of roomOut into r; call fixRoom
// after the scan.
func roomDest(r *parley.Room) []any {
	return []any{&r.ID, &r.Kind, &r.Title, &r.Capacity, &r.MemberCount, &r.LastSeq,
		&r.LastActivityAt, &r.CreatedAt, &r.DirectKey, &r.LastChange, &r.RetentionSeconds}
}

// fixRoom puts the times of a scanned room in UTC.
func fixRoom(r *parley.Room) {
	r.LastActivityAt, r.CreatedAt = r.LastActivityAt.UTC(), r.CreatedAt.UTC()
}

func scanRoom(row pgx.Row) (parley.Room, error) {
	var r parley.Room
	if err := row.Scan(roomDest(&r)...); err != nil {
		return parley.Room{}, err
	}
	fixRoom(&r)
	return r, nil
}

func scanMessage(row pgx.Row) (parley.Message, error) {
	var m parley.Message
	if err := row.Scan(messageDest(&m)...); err != nil {
		return parley.Message{}, err
	}
	fixMessage(&m)
	return m, nil
}

// messageDest returns the scan destinations of msgCols into m; call
// fixMessage after the scan.
func messageDest(m *parley.Message) []any {
	return []any{&m.ID, &m.RoomID, &m.Seq, &m.SenderID, &m.SenderName, &m.Body, &m.ClientID, &m.SentAt,
		&m.EditedAt, &m.DeletedAt, &m.Change, (*string)(&m.Files)}
}

// fixMessage puts the times of a scanned message in UTC.
func fixMessage(m *parley.Message) {
	m.SentAt = m.SentAt.UTC()
	m.EditedAt, m.DeletedAt = utcPtr(m.EditedAt), utcPtr(m.DeletedAt)
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// utc returns t in UTC (pgx reads timestamptz in the local zone).
func utc(t time.Time) time.Time { return t.UTC() }
