package sqlite

import (
	"context"
	"fmt"

	"parley"
)

// Reactions run on the writer like every other write: the message's
// counts (messages.reactions) and the row of who reacted
// (message_reactions) change in the transaction that takes the room's
// next change number, so counts and rows always agree.

// reactionWrites are the writer's statements of reactions.
type reactionWrites struct {
	has, mine, put, drop, counts, set, clear *query
}

func (q *reactionWrites) all() []*query {
	if q.has == nil {
		*q = reactionWrites{
			has: &query{kind: "reaction_at", text: `SELECT count(*) FROM message_reactions
				WHERE room_id = ? AND seq = ? AND emoji = ? AND user_id = ?`},
			mine: &query{kind: "reactions_of_user", text: `SELECT count(*) FROM message_reactions
				WHERE room_id = ? AND user_id = ? AND seq = ?`},
			put: &query{kind: "put_reaction", text: `INSERT INTO message_reactions (room_id, seq, emoji, user_id, created_at)
				VALUES (?, ?, ?, ?, ?)`},
			drop: &query{kind: "drop_reaction", text: `DELETE FROM message_reactions
				WHERE room_id = ? AND seq = ? AND emoji = ? AND user_id = ?`},
			// The counts in the order of each emoji's earliest reaction,
			// as the PostgreSQL store orders them.
			counts: &query{kind: "reaction_counts", text: `SELECT coalesce(json_group_array(json_object('e', emoji, 'n', n)), '')
				FROM (SELECT emoji, count(*) AS n, min(created_at) AS first FROM message_reactions
					WHERE room_id = ? AND seq = ? GROUP BY emoji ORDER BY first, emoji)`},
			set: &query{kind: "set_reactions", text: `UPDATE messages SET reactions = ?, change = ?,
				change_seq = (SELECT last_seq FROM rooms WHERE rooms.id = messages.room_id)
				WHERE room_id = ? AND seq = ?`},
			clear: &query{kind: "clear_reactions", text: `DELETE FROM message_reactions WHERE room_id = ? AND seq = ?`},
		}
	}
	return []*query{q.has, q.mine, q.put, q.drop, q.counts, q.set, q.clear}
}

// reactionReads are the readers' statements of reactions.
type reactionReads struct {
	reactors, mine, messageExists *query
}

func (q *reactionReads) all() []*query {
	if q.reactors == nil {
		*q = reactionReads{
			reactors: &query{kind: "reactors", text: `SELECT u.id, u.name, u.created_at FROM message_reactions r
				JOIN users u ON u.id = r.user_id
				WHERE r.room_id = ? AND r.seq = ? AND r.emoji = ? ORDER BY r.created_at, r.user_id LIMIT ?`},
			mine: &query{kind: "my_reactions", text: `SELECT seq, emoji FROM message_reactions
				WHERE room_id = ? AND user_id = ? AND seq BETWEEN ? AND ? ORDER BY seq, created_at`},
			messageExists: &query{kind: "message_exists", text: `SELECT count(*) FROM messages WHERE room_id = ? AND seq = ?`},
		}
	}
	return []*query{q.reactors, q.mine, q.messageExists}
}

// React implements parley.Store.
func (s *Store) React(ctx context.Context, rc parley.React) (parley.Message, bool, error) {
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		q := &w.s.wq.changes.reactions
		old, _, err := w.messageAt(rc.RoomID, rc.Seq)
		switch {
		case err != nil:
			return result{}, err
		case old.Deleted():
			return result{}, parley.Errorf(parley.CodeConflict, "the message is deleted")
		}
		var has int
		if err := w.row(q.has, rc.RoomID, rc.Seq, rc.Emoji, rc.UserID).Scan(&has); err != nil {
			return result{}, fmt.Errorf("react: %w", err)
		}
		if (has > 0) == rc.Add {
			return result{msg: old}, nil // nothing to do
		}
		if rc.Add {
			var mine int
			if err := w.row(q.mine, rc.RoomID, rc.UserID, rc.Seq).Scan(&mine); err != nil {
				return result{}, fmt.Errorf("react: %w", err)
			}
			if err := parley.CheckReact(old.Reactions, rc.Emoji, mine); err != nil {
				return result{}, err
			}
			if _, err := w.exec(q.put, rc.RoomID, rc.Seq, rc.Emoji, rc.UserID, w.now()); err != nil {
				return result{}, fmt.Errorf("react: %w", err)
			}
		} else if _, err := w.exec(q.drop, rc.RoomID, rc.Seq, rc.Emoji, rc.UserID); err != nil {
			return result{}, fmt.Errorf("react: %w", err)
		}
		r, err := w.nextChange(rc.RoomID)
		if err != nil {
			return result{}, fmt.Errorf("react: %w", err)
		}
		var counts string
		if err := w.row(q.counts, rc.RoomID, rc.Seq).Scan(&counts); err != nil {
			return result{}, fmt.Errorf("react: counts: %w", err)
		}
		if counts == "[]" {
			counts = ""
		}
		m := old
		m.Change = r.LastChange
		if m.Reactions, err = parley.DecodeReactions(counts); err != nil {
			return result{}, err
		}
		if _, err := w.exec(q.set, counts, m.Change, m.RoomID, m.Seq); err != nil {
			return result{}, fmt.Errorf("react: %w", err)
		}
		action := parley.ReactionAdded
		if !rc.Add {
			action = parley.ReactionRemoved
		}
		w.emit(parley.Event{Kind: parley.EventReaction, Room: r, UserID: rc.UserID, Message: m, Emoji: rc.Emoji, Reason: action})
		return result{msg: m, ok: true}, nil
	})
	return res.msg, res.ok, err
}

// Reactors implements parley.Store.
func (s *Store) Reactors(ctx context.Context, roomID string, seq int64, emoji string, limit int) ([]parley.User, error) {
	limit = parley.ClampPageLimit(limit)
	q := s.rq.changes.reactions.reactors
	q.count()
	rows, err := q.stmt.QueryContext(ctx, roomID, seq, emoji, limit)
	if err != nil {
		return nil, s.readErr("reactors", err)
	}
	defer rows.Close()
	var users []parley.User
	for rows.Next() {
		var u parley.User
		var created int64
		if err := rows.Scan(&u.ID, &u.Name, &created); err != nil {
			return nil, s.readErr("reactors", err)
		}
		u.CreatedAt = fromMicro(created)
		users = append(users, u)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("reactors", err)
	}
	if len(users) == 0 {
		var n int
		q := s.rq.changes.reactions.messageExists
		q.count()
		if err := q.stmt.QueryRowContext(ctx, roomID, seq).Scan(&n); err != nil {
			return nil, s.readErr("reactors", err)
		}
		if n == 0 {
			return nil, parley.Errorf(parley.CodeNotFound, "message not found")
		}
	}
	return users, nil
}

// MyReactions implements parley.Store.
func (s *Store) MyReactions(ctx context.Context, roomID, userID string, seqs []int64) (map[int64][]string, error) {
	if len(seqs) == 0 {
		return nil, nil
	}
	lo, hi, want := seqRange(seqs)
	q := s.rq.changes.reactions.mine
	q.count()
	rows, err := q.stmt.QueryContext(ctx, roomID, userID, lo, hi)
	if err != nil {
		return nil, s.readErr("my reactions", err)
	}
	defer rows.Close()
	out := map[int64][]string{}
	for rows.Next() {
		var seq int64
		var emoji string
		if err := rows.Scan(&seq, &emoji); err != nil {
			return nil, s.readErr("my reactions", err)
		}
		if want[seq] {
			out[seq] = append(out[seq], emoji)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("my reactions", err)
	}
	return out, nil
}

// seqRange returns the bounds of seqs and the set of them.
func seqRange(seqs []int64) (lo, hi int64, set map[int64]bool) {
	lo, hi = seqs[0], seqs[0]
	set = make(map[int64]bool, len(seqs))
	for _, s := range seqs {
		lo, hi = min(lo, s), max(hi, s)
		set[s] = true
	}
	return lo, hi, set
}
