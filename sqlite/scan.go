package sqlite

import (
	"database/sql"
	"time"

	"parley"
)

// Column lists, in the order scanRoom and scanMessage read them.
const (
	roomCols = `id, kind, title, capacity, member_count, last_seq, last_activity_at, created_at, coalesce(direct_key, ''), last_change, retention_seconds`
	msgCols  = `id, room_id, seq, sender_id, sender_name, body, client_id, sent_at, edited_at, deleted_at, change, reactions,
		reply_seq, reply_sender, reply_excerpt, thread, files, pinned_by, pinned_at, pin_change, mentions`
)

// scanner is a *sql.Row or *sql.Rows.
type scanner interface{ Scan(dest ...any) error }

// roomDest returns the scan destinations of roomCols into r; call
// fixRoom after the scan.
func roomDest(r *parley.Room, at, created *int64) []any {
	return []any{&r.ID, &r.Kind, &r.Title, &r.Capacity, &r.MemberCount, &r.LastSeq, at, created, &r.DirectKey, &r.LastChange, &r.RetentionSeconds}
}

func fixRoom(r *parley.Room, at, created int64) {
	r.LastActivityAt = fromMicro(at)
	r.CreatedAt = fromMicro(created)
}

func scanRoom(s scanner) (parley.Room, error) {
	var r parley.Room
	var at, created int64
	if err := s.Scan(roomDest(&r, &at, &created)...); err != nil {
		return parley.Room{}, err
	}
	fixRoom(&r, at, created)
	return r, nil
}

func scanMessage(s scanner) (parley.Message, error) {
	var m parley.Message
	var sent int64
	var edited, deleted sql.NullInt64
	var x extras
	if err := s.Scan(append([]any{&m.ID, &m.RoomID, &m.Seq, &m.SenderID, &m.SenderName, &m.Body, &m.ClientID, &sent,
		&edited, &deleted, &m.Change}, x.dest()...)...); err != nil {
		return parley.Message{}, err
	}
	m.SentAt = fromMicro(sent)
	m.EditedAt, m.DeletedAt = optMicro(edited), optMicro(deleted)
	return m, x.fill(&m)
}

// optMicro converts a stored time that may be NULL.
func optMicro(us sql.NullInt64) *time.Time {
	if !us.Valid {
		return nil
	}
	t := fromMicro(us.Int64)
	return &t
}

// fromMicro converts a stored time (unix microseconds) back to UTC.
func fromMicro(us int64) time.Time { return time.UnixMicro(us).UTC() }

// extras are the scan destinations of a message's reactions, reply and
// thread columns (the last of msgCols); fill puts them in the message.
type extras struct {
	reactions, replySender, replyExcerpt, thread string
	replySeq                                     int64
	files                                        sql.NullString // NULL for a message without files
	pinnedBy                                     string
	pinnedAt                                     sql.NullInt64 // NULL for a message that is not pinned
	pinChange                                    int64
	mentions                                     sql.NullString // NULL for a message without mentions
}

func (x *extras) dest() []any {
	return []any{&x.reactions, &x.replySeq, &x.replySender, &x.replyExcerpt, &x.thread, &x.files, &x.pinnedBy, &x.pinnedAt, &x.pinChange, &x.mentions}
}

func (x *extras) fill(m *parley.Message) error {
	var err error
	m.Files = parley.FileList(x.files.String)
	if x.pinChange > 0 && x.pinnedAt.Valid {
		m.Pinned = &parley.Pin{By: x.pinnedBy, At: fromMicro(x.pinnedAt.Int64), Change: x.pinChange}
	}
	m.Mentions = parley.MentionList(x.mentions.String)
	if m.Reactions, err = parley.DecodeReactions(x.reactions); err != nil {
		return err
	}
	if x.replySeq > 0 {
		m.ReplyTo = &parley.ReplyRef{Seq: x.replySeq, SenderName: x.replySender, Excerpt: x.replyExcerpt}
	}
	m.Thread, err = parley.DecodeThread(x.thread)
	return err
}

// mentionsText is the stored form of a message's mentions: NULL (nil)
// for none.
func mentionsText(l parley.MentionList) any {
	if l == "" {
		return nil
	}
	return string(l)
}

// filesJSON is the stored form of a message's files: NULL (nil) for none.
func filesJSON(files parley.FileList) any {
	if files == "" {
		return nil
	}
	return string(files)
}
