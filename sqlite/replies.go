package sqlite

import (
	"context"
	"errors"
	"fmt"
	"time"

	"parley"
)

// A reply is a Send of its own on the writer (never grouped with others):
// in one transaction it checks the message replied to, stores the message
// as any Send does (flushSends), marks it a reply of the thread's root,
// and moves the root's thread summary, which takes the room's next change
// number (EventThread). The summary is counted from the replies stored, as
// the PostgreSQL store counts it.

// replyWrites are the writer's statements of replies.
type replyWrites struct {
	setReply, threadOf, setThread, excerpts *query
}

func (q *replyWrites) all() []*query {
	if q.setReply == nil {
		*q = replyWrites{
			setReply: &query{kind: "set_reply", text: `UPDATE messages SET reply_seq = ?, reply_sender = ?, reply_excerpt = ?
				WHERE room_id = ? AND seq = ?`},
			// ?1 room, ?2 root, ?3 the last reply's time (RFC 3339).
			threadOf: &query{kind: "thread_of", text: `SELECT json_object(
				'replies', (SELECT count(*) FROM messages WHERE room_id = ?1 AND reply_seq = ?2),
				'last_reply_at', ?3,
				'participants', json((SELECT json_group_array(sender_id) FROM (SELECT sender_id, min(seq) AS first FROM messages
					WHERE room_id = ?1 AND reply_seq = ?2 GROUP BY sender_id ORDER BY first LIMIT ` + fmt.Sprint(parley.MaxParticipants) + `))))`},
			setThread: &query{kind: "set_thread", text: `UPDATE messages SET thread = ?, change = ?,
				change_seq = (SELECT last_seq FROM rooms WHERE rooms.id = messages.room_id) WHERE room_id = ? AND seq = ?`},
			excerpts: &query{kind: "reply_excerpts", text: `UPDATE messages SET reply_excerpt = substr(?1, 1, ` + fmt.Sprint(parley.MaxExcerpt) + `)
				WHERE room_id = ?2 AND reply_seq = ?3 AND reply_seq > 0`},
		}
	}
	return []*query{q.setReply, q.threadOf, q.setThread, q.excerpts}
}

// sendReply stores a reply (m.ReplyTo > 0).
func (s *Store) sendReply(ctx context.Context, m parley.NewMessage) (parley.Message, bool, error) {
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		q := &w.s.wq.changes.replies
		req := &sendReq{In: writeOp{send: &m}}
		// A repeat of a stored reply's client_id returns it, whatever
		// became of the message it replied to since (as PostgreSQL).
		if m.ClientID != "" {
			stored, err := w.clientMessages([]*sendReq{req})
			if err != nil {
				return result{}, fmt.Errorf("reply: key: %w", err)
			}
			if old, ok := stored[clientKey{m.RoomID, m.SenderID, m.ClientID}]; ok {
				return result{msg: old}, nil
			}
		}
		parent, _, err := w.messageAt(m.RoomID, m.ReplyTo)
		var pe *parley.Error
		switch {
		case errors.As(err, &pe) && pe.Code == parley.CodeNotFound:
			return result{}, parley.Errorf(parley.CodeInvalid, "reply_to %d is no message of this room", m.ReplyTo)
		case err != nil:
			return result{}, err
		case parent.Deleted():
			return result{}, parley.Errorf(parley.CodeConflict, "the message replied to is deleted")
		}
		root := parent
		if parent.ReplyTo != nil { // one level: the reply joins its parent's thread
			if root, _, err = w.messageAt(m.RoomID, parent.ReplyTo.Seq); err != nil {
				return result{}, fmt.Errorf("reply: root: %w", err)
			}
		}
		if err := w.flushSends([]*sendReq{req}); err != nil {
			return result{}, err
		}
		if req.Err != nil || !req.Out.ok {
			return req.Out, req.Err // refused, or a repeat: the stored message
		}
		msg := req.Out.msg
		ref := &parley.ReplyRef{Seq: root.Seq, SenderName: root.SenderName, Excerpt: parley.Excerpt(root.Body)}
		if _, err := w.exec(q.setReply, ref.Seq, ref.SenderName, ref.Excerpt, msg.RoomID, msg.Seq); err != nil {
			return result{}, fmt.Errorf("reply: %w", err)
		}
		msg.ReplyTo = ref
		for i := len(w.events) - 1; i >= 0; i-- {
			if ev := &w.events[i]; ev.Kind == parley.EventMessage && ev.Message.RoomID == msg.RoomID && ev.Message.Seq == msg.Seq {
				ev.Message.ReplyTo = ref
				break
			}
		}
		r, err := w.nextChange(msg.RoomID)
		if err != nil {
			return result{}, fmt.Errorf("reply: %w", err)
		}
		var thread string
		if err := w.row(q.threadOf, msg.RoomID, root.Seq, msg.SentAt.Format(time.RFC3339Nano)).Scan(&thread); err != nil {
			return result{}, fmt.Errorf("reply: thread: %w", err)
		}
		if _, err := w.exec(q.setThread, thread, r.LastChange, msg.RoomID, root.Seq); err != nil {
			return result{}, fmt.Errorf("reply: thread: %w", err)
		}
		root.Change = r.LastChange
		if root.Thread, err = parley.DecodeThread(thread); err != nil {
			return result{}, err
		}
		w.emit(parley.Event{Kind: parley.EventThread, Room: r, UserID: msg.SenderID, Message: root})
		return result{msg: msg, ok: true}, nil
	})
	return res.msg, res.ok, err
}

// refreshExcerpts rewrites the excerpt of root m's replies after an edit
// (m.Body) or a deletion (empty): only a root with a thread has replies.
func (w *wtx) refreshExcerpts(m *parley.Message) error {
	if m.Thread == nil {
		return nil
	}
	_, err := w.exec(w.s.wq.changes.replies.excerpts, m.Body, m.RoomID, m.Seq)
	return err
}

// Replies implements parley.Store.
func (s *Store) Replies(ctx context.Context, roomID string, root, after int64, limit int) ([]parley.Message, error) {
	limit = parley.ClampPageLimit(limit)
	q := s.rq.changes.thread
	q.count()
	rows, err := q.stmt.QueryContext(ctx, roomID, root, after, limit)
	if err != nil {
		return nil, s.readErr("replies", err)
	}
	msgs, err := collectMessages(rows, limit, false)
	if err != nil {
		return nil, s.readErr("replies", err)
	}
	if len(msgs) == 0 {
		var n int
		q := s.rq.changes.reactions.messageExists
		q.count()
		if err := q.stmt.QueryRowContext(ctx, roomID, root).Scan(&n); err != nil {
			return nil, s.readErr("replies", err)
		}
		if n == 0 {
			return nil, parley.Errorf(parley.CodeNotFound, "message not found")
		}
	}
	return msgs, nil
}
