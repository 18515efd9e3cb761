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
		&r.LastActivityAt, &r.CreatedAt, &r.DirectKey}
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
	if err := row.Scan(&m.ID, &m.RoomID, &m.Seq, &m.SenderID, &m.SenderName, &m.Body, &m.ClientID, &m.SentAt); err != nil {
		return parley.Message{}, err
	}
	m.SentAt = m.SentAt.UTC()
	return m, nil
}

// utc returns t in UTC (pgx reads timestamptz in the local zone).
func utc(t time.Time) time.Time { return t.UTC() }
