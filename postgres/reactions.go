package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
)

// A reaction is one statement under the room's lock, like an edit: it
// reads the message, whether the user's reaction is there and the bounds,
// and only when there is something to do and the bounds allow, takes the
// room's next change number, adds or removes the row and stores the
// message's new counts. The counts are the rows after the change grouped
// by emoji, in the order of each emoji's earliest reaction (the
// statement's data-changing parts do not see each other, so it counts the
// rows as they will be). The SQLite store orders them alike.

// reactQuery: $1 room, $2 seq, $3 emoji, $4 user, $5 add, $6 the per-user
// bound, $7 the per-message bound, $8 now.
var reactQuery = `WITH old AS (SELECT ` + msgCols + ` FROM messages WHERE room_id = $1 AND seq = $2),
	has AS (SELECT 1 FROM message_reactions WHERE room_id = $1 AND seq = $2 AND emoji = $3 AND user_id = $4),
	mine AS (SELECT count(*) AS n FROM message_reactions WHERE room_id = $1 AND seq = $2 AND user_id = $4),
	kinds AS (SELECT count(DISTINCT emoji) AS n, coalesce(bool_or(emoji = $3), false) AS present
		FROM message_reactions WHERE room_id = $1 AND seq = $2),
	ok AS (SELECT 1 FROM old WHERE deleted_at IS NULL AND CASE WHEN $5::boolean
		THEN NOT EXISTS (SELECT 1 FROM has) AND (SELECT n FROM mine) < $6
			AND ((SELECT present FROM kinds) OR (SELECT n FROM kinds) < $7)
		ELSE EXISTS (SELECT 1 FROM has) END),
	r AS (UPDATE rooms SET last_change = last_change + 1 WHERE id = $1 AND EXISTS (SELECT 1 FROM ok)
		RETURNING ` + roomRet + `),
	after AS (SELECT emoji, created_at FROM message_reactions
			WHERE room_id = $1 AND seq = $2 AND NOT (NOT $5::boolean AND emoji = $3 AND user_id = $4)
		UNION ALL SELECT $3, $8::timestamptz WHERE $5::boolean),
	agg AS (SELECT coalesce((SELECT json_agg(json_build_object('e', emoji, 'n', n) ORDER BY first, emoji)::text
		FROM (SELECT emoji, count(*) AS n, min(created_at) AS first FROM after GROUP BY emoji) AS x), '') AS s),
	ins AS (INSERT INTO message_reactions (room_id, seq, emoji, user_id, created_at)
		SELECT $1, $2, $3, $4, $8 FROM r WHERE $5::boolean),
	del AS (DELETE FROM message_reactions USING r WHERE NOT $5::boolean
		AND message_reactions.room_id = $1 AND message_reactions.seq = $2
		AND message_reactions.emoji = $3 AND message_reactions.user_id = $4),
	m AS (UPDATE messages SET reactions = agg.s, change = r.last_change, change_seq = r.last_seq FROM r, agg
		WHERE messages.room_id = $1 AND messages.seq = $2)
	SELECT ` + msgOut("old") + `, ` + roomOut("r") + `, EXISTS (SELECT 1 FROM has), (SELECT n FROM mine),
		(SELECT n FROM kinds), (SELECT present FROM kinds), (SELECT s FROM agg)
	FROM (VALUES (1)) AS one LEFT JOIN old ON true LEFT JOIN r ON true`

// React implements parley.Store.
func (s *Store) React(ctx context.Context, rc parley.React) (parley.Message, bool, error) {
	res, err := s.write(ctx, &react{React: rc})
	return res.msg, res.ok, err
}

type react struct{ parley.React }

func (o *react) lockRoom() string { return o.RoomID }
func (o *react) shard() string    { return o.RoomID }
func (o *react) queue(b *pgx.Batch, q *writeQueries, now time.Time) {
	b.Queue(reactQuery, o.RoomID, o.Seq, o.Emoji, o.UserID, o.Add,
		parley.MaxReactionsPerUser, parley.MaxReactionsPerMessage, now)
}

func (o *react) decode(row pgx.Row) (result, []parley.Event, error) {
	var old parley.Message
	var r parley.Room
	var has, present bool
	var mine, kinds int
	var agg string
	if err := row.Scan(append(append(messageDest(&old), roomDest(&r)...), &has, &mine, &kinds, &present, &agg)...); err != nil {
		return result{}, nil, err
	}
	fixMessage(&old)
	fixRoom(&r)
	switch {
	case old.ID == "":
		return result{}, nil, parley.Errorf(parley.CodeNotFound, "message not found")
	case old.Deleted():
		return result{}, nil, parley.Errorf(parley.CodeConflict, "the message is deleted")
	case has == o.Add:
		return result{msg: old}, nil, nil // nothing to do
	case r.ID == "":
		// Refused by a bound: say which.
		if err := parley.CheckReact(old.Reactions, o.Emoji, mine); err != nil {
			return result{}, nil, err
		}
		return result{}, nil, parley.Errorf(parley.CodeConflict, "at most %d distinct reactions on a message", parley.MaxReactionsPerMessage)
	}
	m := old
	m.Change = r.LastChange
	rs, err := parley.DecodeReactions(agg)
	if err != nil {
		return result{}, nil, err
	}
	m.Reactions = rs
	action := parley.ReactionAdded
	if !o.Add {
		action = parley.ReactionRemoved
	}
	return result{msg: m, ok: true}, []parley.Event{{Kind: parley.EventReaction, Room: r, UserID: o.UserID,
		Message: m, Emoji: o.Emoji, Reason: action}}, nil
}

// Reactors implements parley.Store.
func (s *Store) Reactors(ctx context.Context, roomID string, seq int64, emoji string, limit int) ([]parley.User, error) {
	limit = parley.ClampPageLimit(limit)
	rows, err := s.query(ctx, s.rq.reactions.reactors, roomID, seq, emoji, limit)
	if err != nil {
		return nil, s.readErr("reactors", err)
	}
	users, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (parley.User, error) {
		var u parley.User
		err := row.Scan(&u.ID, &u.Name, &u.CreatedAt)
		u.CreatedAt = u.CreatedAt.UTC()
		return u, err
	})
	if err != nil {
		return nil, s.readErr("reactors", err)
	}
	if len(users) == 0 {
		rows, err := s.query(ctx, s.rq.reactions.messageExists, roomID, seq)
		if err != nil {
			return nil, s.readErr("reactors", err)
		}
		n, err := pgx.CollectExactlyOneRow(rows, pgx.RowTo[int64])
		if err != nil {
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
	rows, err := s.query(ctx, s.rq.reactions.mine, roomID, userID, seqs)
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
		out[seq] = append(out[seq], emoji)
	}
	if err := rows.Err(); err != nil {
		return nil, s.readErr("my reactions", err)
	}
	return out, nil
}

// reactionReads are the readers' statements of reactions.
type reactionReads struct {
	reactors, mine, messageExists *query
}

func newReactionReads(m *metrics) reactionReads {
	q := reactionReads{
		reactors: &query{kind: "reactors", text: `SELECT u.id, u.name, u.created_at FROM message_reactions r
			JOIN users u ON u.id = r.user_id
			WHERE r.room_id = $1 AND r.seq = $2 AND r.emoji = $3 ORDER BY r.created_at, r.user_id LIMIT $4`},
		mine: &query{kind: "my_reactions", text: `SELECT seq, emoji FROM message_reactions
			WHERE room_id = $1 AND user_id = $2 AND seq = ANY($3::bigint[]) ORDER BY seq, created_at`},
		messageExists: &query{kind: "message_exists", text: `SELECT count(*) FROM messages WHERE room_id = $1 AND seq = $2`},
	}
	bind(m, q.reactors, q.mine, q.messageExists)
	return q
}

func (o *react) changesMessage() {}
