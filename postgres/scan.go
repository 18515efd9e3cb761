package postgres

import (
	"fmt"
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
		&m.EditedAt, &m.DeletedAt, &m.Change, reactionsDest{&m.Reactions},
		extraDest{m, 0}, extraDest{m, 1}, extraDest{m, 2}, extraDest{m, 3}, (*string)(&m.Files),
		pinDest{m, 0}, pinDest{m, 1}, pinDest{m, 2}, (*string)(&m.Mentions)}
}

// pinDest scans a message's pin columns (pinned_by, pinned_at,
// pin_change: col 0 to 2, in that order) into the message: Pinned is nil
// unless pin_change is above 0.
type pinDest struct {
	m   *parley.Message
	col int
}

// Scan implements sql.Scanner.
func (d pinDest) Scan(src any) error {
	switch d.col {
	case 0:
		d.m.Pinned = &parley.Pin{}
		switch v := src.(type) {
		case nil:
		case string:
			d.m.Pinned.By = v
		case []byte:
			d.m.Pinned.By = string(v)
		default:
			return fmt.Errorf("scan pinned_by: unexpected %T", src)
		}
	case 1:
		switch v := src.(type) {
		case nil:
		case time.Time:
			d.m.Pinned.At = v.UTC()
		default:
			return fmt.Errorf("scan pinned_at: unexpected %T", src)
		}
	case 2:
		switch v := src.(type) {
		case int64:
			d.m.Pinned.Change = v
		case int32:
			d.m.Pinned.Change = int64(v)
		case nil:
		default:
			return fmt.Errorf("scan pin_change: unexpected %T", src)
		}
		if d.m.Pinned.Change <= 0 {
			d.m.Pinned = nil
		}
	}
	return nil
}

// extraDest scans a reply's columns (reply_seq, reply_sender,
// reply_excerpt: col 0 to 2, in that order) and a root's thread (col 3)
// into the message.
type extraDest struct {
	m   *parley.Message
	col int
}

// Scan implements sql.Scanner.
func (d extraDest) Scan(src any) error {
	if d.col == 0 {
		var n int64
		switch v := src.(type) {
		case int64:
			n = v
		case int32:
			n = int64(v)
		case nil:
		default:
			return fmt.Errorf("scan reply_seq: unexpected %T", src)
		}
		d.m.ReplyTo = nil
		if n > 0 {
			d.m.ReplyTo = &parley.ReplyRef{Seq: n}
		}
		return nil
	}
	var s string
	switch v := src.(type) {
	case nil:
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		return fmt.Errorf("scan message column: unexpected %T", src)
	}
	switch {
	case d.col == 3:
		t, err := parley.DecodeThread(s)
		d.m.Thread = t
		return err
	case d.m.ReplyTo == nil:
	case d.col == 1:
		d.m.ReplyTo.SenderName = s
	case d.col == 2:
		d.m.ReplyTo.Excerpt = s
	}
	return nil
}

// reactionsDest scans the reactions column (parley.EncodeReactions).
type reactionsDest struct{ rs *[]parley.Reaction }

// Scan implements sql.Scanner.
func (d reactionsDest) Scan(src any) error {
	var s string
	switch v := src.(type) {
	case nil:
	case string:
		s = v
	case []byte:
		s = string(v)
	default:
		return fmt.Errorf("scan reactions: unexpected %T", src)
	}
	rs, err := parley.DecodeReactions(s)
	*d.rs = rs
	return err
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
