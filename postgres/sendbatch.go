package postgres

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"

	"parley"
	"parley/groupcommit"
)

// A batch of sends only, the usual batch under load, has a path of its own
// (trySends) whose statements are as plain as the messages: the set-based
// statement of the general path (sendMany) costs about twice the bare
// INSERT of the same messages in PostgreSQL's CPU (joins, sorts and CTEs
// over every message, a room row returned with each), and what it adds
// goes with the rooms. Here the checks and the seqs are worked out in Go
// from what three reads return, and the writes are one multi-row INSERT,
// one UPDATE of all the rooms and one of all the read positions:
//
//  1. BEGIN; the rooms locked in id order and read (the lock statement of
//     the general path, returning the rows: FOR NO KEY UPDATE returns the
//     latest version of each, and nobody else changes them until COMMIT);
//     which (room, sender) pairs are members, with the sender's name where
//     a send left it empty; the stored messages of the batch's client ids.
//     One round trip; every statement after the lock reads what was
//     committed before the locks were granted, as in the general path.
//  2. The writer's ticket, under the rooms' locks; then the INSERT of the
//     new messages, seqs last_seq+1, +2, … per room in batch order; the
//     rooms' last_seq and last_activity_at; the senders' read positions;
//     and COMMIT. One round trip (the COMMIT had one of its own before:
//     the locks are now held for one round trip less).
//
// A send whose room, membership or sender fails the checks (rare: the
// gateway checked membership before) makes the whole batch run again on
// the general path, which gives each send its exact outcome; so does a
// statement error of a send's own (bad text). Nothing was written then.

// minSendBatch is the smallest batch of sends that takes trySends: below
// it, one round trip less (the general path's one against two) weighs more
// than the CPU.
const minSendBatch = 16

// errSendChecks is trySends' error when a send failed its checks: the batch
// runs again on the general path.
var errSendChecks = errors.New("send batch: a send failed its checks")

// sendBatchQueries are trySends' statements.
type sendBatchQueries struct {
	lockRead, members, keys, insert, rooms, reads *query
}

func newSendBatchQueries(m *metrics, tsv func(string) string) *sendBatchQueries {
	q := &sendBatchQueries{
		// $1 the rooms, sorted.
		lockRead: &query{kind: "lock_read_rooms", text: `SELECT ` + roomOut("rooms") + ` FROM rooms
			WHERE id = ANY($1::text[]) ORDER BY id FOR NO KEY UPDATE`},
		// The pairs $1 room, $2 sender, $3 whether to look the sender's
		// name up: one row (ord, name) for each pair that is a member.
		members: &query{kind: "send_members", text: `SELECT p.ord,
				CASE WHEN p.named THEN coalesce((SELECT name FROM users WHERE id = p.u), '') ELSE '' END
			FROM unnest($1::text[], $2::text[], $3::bool[]) WITH ORDINALITY AS p (r, u, named, ord)
			JOIN members m ON m.room_id = p.r AND m.user_id = p.u`},
		// The keys $1 room, $2 sender, $3 client id: one row for each
		// stored message of a key.
		keys: &query{kind: "send_keys", text: `SELECT k.ord, m.id, m.seq, m.sender_name, m.body, m.sent_at,
				m.edited_at, m.deleted_at, m.change, coalesce(m.files, '')
			FROM unnest($1::text[], $2::text[], $3::text[]) WITH ORDINALITY AS k (r, s, c, ord)
			JOIN messages m ON m.room_id = k.r AND m.sender_id = k.s AND m.client_id = k.c AND m.client_id <> ''`},
		insert: &query{kind: "insert_messages", text: `INSERT INTO messages
				(room_id, seq, id, sender_id, sender_name, body, client_id, sent_at, tsv, files, mentions)
			SELECT r, q, i, s, n, b, c, a, ` + tsv("b") + `, nullif(f, ''), nullif(mt, '')
			FROM unnest($1::text[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
				$8::timestamptz[], $9::text[], $10::text[]) AS x (r, q, i, s, n, b, c, a, f, mt)`},
		// $1 room, $2 its new last seq, $3 the time of its last message.
		rooms: &query{kind: "send_rooms", text: `UPDATE rooms SET last_seq = u.seq,
				last_activity_at = greatest(rooms.last_activity_at, u.at)
			FROM unnest($1::text[], $2::bigint[], $3::timestamptz[]) AS u (id, seq, at)
			WHERE rooms.id = u.id`},
		// $1 room, $2 sender, $3 the seq of the sender's last message.
		reads: &query{kind: "send_reads", text: `UPDATE members SET read_seq = u.seq
			FROM unnest($1::text[], $2::text[], $3::bigint[]) AS u (r, s, seq)
			WHERE members.room_id = u.r AND members.user_id = u.s AND members.read_seq < u.seq`},
	}
	bind(m, q.lockRead, q.members, q.keys, q.insert, q.rooms, q.reads)
	return q
}

// onlySends returns the batch's sends when it holds nothing else and is
// large enough for trySends.
func (s *Store) onlySends(reqs []*groupcommit.Request[writeOp, result]) []*send {
	if len(reqs) < s.minSendBatch {
		return nil
	}
	ops := make([]*send, len(reqs))
	for i, r := range reqs {
		o, ok := r.In.(*send)
		if !ok {
			return nil
		}
		ops[i] = o
	}
	return ops
}

// sendKey is a send's idempotency key.
type sendKey struct{ room, sender, clientID string }

// sendPair is a send's room and sender.
type sendPair struct{ room, sender string }

// trySends runs a batch of sends only, reqs and their ops (see above); it
// returns like tryBatch, and errSendChecks when a send failed its checks,
// except that it sets each request's Out itself when it commits (no
// tried.outs: a batch's worth of results less to allocate).
func (s *Store) trySends(reqs []*groupcommit.Request[writeOp, result], ops []*send) (tried, error) {
	ctx, cancel := context.WithTimeout(context.Background(), s.writeTimeout)
	defer cancel()
	q := s.wq.sends

	rd := s.sendReadsOf(ops)

	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return tried{failed: failedBatch, ticket: noTicket}, fmt.Errorf("acquire: %w", err)
	}
	defer conn.Release()
	b := &pgx.Batch{}
	s.wq.begin.count()
	b.BeginTx(pgx.TxOptions{})
	q.lockRead.count()
	b.Queue(q.lockRead.text, rd.roomIDs)
	q.members.count()
	b.Queue(q.members.text, rd.pr, rd.pu, rd.named)
	if len(rd.kr) > 0 {
		q.keys.count()
		b.Queue(q.keys.text, rd.kr, rd.ks, rd.kc)
	}
	br := conn.SendBatch(ctx, b)
	tx := br.Tx()
	fail := func(err error) (tried, error) {
		br.Close()
		s.wq.rollback.count()
		tx.Rollback(ctx)
		return tried{failed: failedBatch, ticket: noTicket}, err
	}
	rooms, names, olds, err := readSendChecks(br, len(rd.pr), len(rd.kr))
	if err != nil {
		return fail(err)
	}
	if err := br.Close(); err != nil {
		return fail(err)
	}

	// Each send's outcome, in order, as the general path's decodeSends
	// gives it.
	tr := tried{events: make([]parley.Event, 0, len(ops))}
	committed := false
	defer func() {
		if !committed { // the requests get their outcome from the next attempt, or the batch's error
			for _, r := range reqs {
				r.Out = result{}
			}
		}
	}()
	w, ok := sendOutcomes(reqs, ops, rd, rooms, names, olds, &tr)
	if !ok {
		// The general path tells which check failed.
		return fail(errSendChecks)
	}

	// The ticket is taken under the rooms' locks, before the COMMIT goes
	// out with the writes.
	tr.ticket = s.seq.ticket()
	if err := s.writeSends(ctx, tx, w.ins, w.ur, w.us, w.ua, w.reads); err != nil {
		s.wq.rollback.count()
		tx.Rollback(ctx) // when the COMMIT ran, a no-op
		return tried{failed: failedBatch, ticket: tr.ticket}, err
	}
	committed = true
	return tr, nil
}

// sendReads is what the first round trip of trySends asks for: the
// rooms to lock, each room and sender pair and each idempotency key, as
// the queries' argument arrays.
type sendReads struct {
	roomIDs    []string
	pairs      map[sendPair]int // index in pr, pu, named
	pr, pu     []string
	named      []bool
	keys       map[sendKey]int // index in kr, ks, kc
	kr, ks, kc []string
}

// sendReadsOf sets each op's message and gathers what the checks of the
// batch read.
func (s *Store) sendReadsOf(ops []*send) *sendReads {
	rd := &sendReads{
		roomIDs: make([]string, 0, len(ops)),
		pairs:   make(map[sendPair]int, len(ops)),
		keys:    map[sendKey]int{},
	}
	for _, o := range ops {
		o.setMessage(s.now())
		m := o.m
		rd.roomIDs = append(rd.roomIDs, m.RoomID)
		p := sendPair{m.RoomID, m.SenderID}
		i, ok := rd.pairs[p]
		if !ok {
			i = len(rd.pr)
			rd.pairs[p] = i
			rd.pr, rd.pu, rd.named = append(rd.pr, p.room), append(rd.pu, p.sender), append(rd.named, false)
		}
		rd.named[i] = rd.named[i] || m.SenderName == ""
		if k := (sendKey{m.RoomID, m.SenderID, m.ClientID}); m.ClientID != "" {
			if _, ok := rd.keys[k]; !ok {
				rd.keys[k] = len(rd.kr)
				rd.kr, rd.ks, rd.kc = append(rd.kr, k.room), append(rd.ks, k.sender), append(rd.kc, k.clientID)
			}
		}
	}
	slices.Sort(rd.roomIDs)
	rd.roomIDs = slices.Compact(rd.roomIDs)
	return rd
}

// sendWrites is what trySends writes: the new messages, the rooms' update
// (each room in ur, its last seq in us and the time of its last message
// in ua) and each pair's last seq.
type sendWrites struct {
	ins   *insertCols
	ur    []string
	us    []int64
	ua    []time.Time
	reads map[sendPair]int64
}

// sendOutcomes gives each send of the batch its outcome, in order, as the
// general path's decodeSends gives it: it sets each request's Out, adds
// the events to tr and returns what to write. It returns false when a
// send failed its checks.
func sendOutcomes(reqs []*groupcommit.Request[writeOp, result], ops []*send, rd *sendReads,
	rooms map[string]*parley.Room, names map[int]string, olds map[int]parley.Message, tr *tried) (sendWrites, bool) {
	first := map[sendKey]parley.Message{}   // the new message of each key
	top := make(map[string]int, len(rooms)) // room → index in w.ur, w.us, w.ua
	w := sendWrites{
		ins:   newInsertCols(len(ops)),
		ur:    make([]string, 0, len(rooms)),
		us:    make([]int64, 0, len(rooms)),
		ua:    make([]time.Time, 0, len(rooms)),
		reads: make(map[sendPair]int64, len(rd.pairs)),
	}
	for i, o := range ops {
		m := o.m
		k := sendKey{m.RoomID, m.SenderID, m.ClientID}
		if m.ClientID != "" {
			if old, ok := olds[rd.keys[k]]; ok { // a repeat of a client id stored before
				old.RoomID, old.SenderID, old.ClientID = m.RoomID, m.SenderID, m.ClientID
				reqs[i].Out = result{msg: old}
				continue
			}
		}
		room := rooms[m.RoomID]
		name, member := names[rd.pairs[sendPair{m.RoomID, m.SenderID}]]
		if room == nil || !member || m.SenderName == "" && name == "" {
			return sendWrites{}, false
		}
		if m.ClientID != "" {
			if msg, ok := first[k]; ok { // a repeat of a client id earlier in the batch
				reqs[i].Out = result{msg: msg}
				continue
			}
		}
		msg := o.msg
		room.LastSeq++
		msg.Seq = room.LastSeq
		if msg.SenderName == "" {
			msg.SenderName = name
		}
		if msg.SentAt.After(room.LastActivityAt) {
			room.LastActivityAt = msg.SentAt
		}
		if msg.ClientID != "" {
			first[k] = msg
		}
		w.ins.add(msg)
		j, ok := top[m.RoomID]
		if !ok {
			j = len(w.ur)
			top[m.RoomID] = j
			w.ur, w.us, w.ua = append(w.ur, m.RoomID), append(w.us, 0), append(w.ua, time.Time{})
		}
		w.us[j], w.ua[j] = msg.Seq, msg.SentAt
		w.reads[sendPair{m.RoomID, m.SenderID}] = msg.Seq
		reqs[i].Out = result{msg: msg, ok: true}
		tr.events = append(tr.events, parley.Event{Kind: parley.EventMessage, Room: *room, UserID: msg.SenderID, Message: msg})
	}
	return w, true
}

// readSendChecks reads the results of trySends' first round trip: the
// locked rooms by id, the name of each member pair by index (absent: not
// a member), the stored message of each key by index.
func readSendChecks(br pgx.BatchResults, nPairs, nKeys int) (map[string]*parley.Room, map[int]string, map[int]parley.Message, error) {
	if _, err := br.Exec(); err != nil {
		return nil, nil, nil, fmt.Errorf("begin: %w", err)
	}
	rooms := map[string]*parley.Room{}
	rows, err := br.Query()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("lock rooms: %w", err)
	}
	for rows.Next() {
		r := new(parley.Room)
		if err := rows.Scan(roomDest(r)...); err != nil {
			return nil, nil, nil, fmt.Errorf("lock rooms: %w", err)
		}
		fixRoom(r)
		rooms[r.ID] = r
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("lock rooms: %w", err)
	}
	names := make(map[int]string, nPairs)
	rows, err = br.Query()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("members: %w", err)
	}
	for rows.Next() {
		var ord int
		var name string
		if err := rows.Scan(&ord, &name); err != nil {
			return nil, nil, nil, fmt.Errorf("members: %w", err)
		}
		names[ord-1] = name
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("members: %w", err)
	}
	olds := map[int]parley.Message{}
	if nKeys == 0 {
		return rooms, names, olds, nil
	}
	rows, err = br.Query()
	if err != nil {
		return nil, nil, nil, fmt.Errorf("client ids: %w", err)
	}
	for rows.Next() {
		var ord int
		var m parley.Message
		if err := rows.Scan(&ord, &m.ID, &m.Seq, &m.SenderName, &m.Body, &m.SentAt, &m.EditedAt, &m.DeletedAt, &m.Change, (*string)(&m.Files)); err != nil {
			return nil, nil, nil, fmt.Errorf("client ids: %w", err)
		}
		fixMessage(&m)
		olds[ord-1] = m
	}
	if err := rows.Err(); err != nil {
		return nil, nil, nil, fmt.Errorf("client ids: %w", err)
	}
	return rooms, names, olds, nil
}

// insertCols are the columns of the INSERT of trySends.
type insertCols struct {
	rooms, ids, senders, names, bodies, clientIDs, files, mentions []string
	seqs                                                           []int64
	times                                                          []time.Time
}

func newInsertCols(n int) *insertCols {
	return &insertCols{rooms: make([]string, 0, n), ids: make([]string, 0, n), senders: make([]string, 0, n),
		names: make([]string, 0, n), bodies: make([]string, 0, n), clientIDs: make([]string, 0, n),
		seqs: make([]int64, 0, n), times: make([]time.Time, 0, n), files: make([]string, 0, n), mentions: make([]string, 0, n)}
}

func (c *insertCols) add(m parley.Message) {
	c.rooms, c.seqs, c.ids = append(c.rooms, m.RoomID), append(c.seqs, m.Seq), append(c.ids, m.ID)
	c.senders, c.names, c.bodies = append(c.senders, m.SenderID), append(c.names, m.SenderName), append(c.bodies, m.Body)
	c.clientIDs, c.times, c.files = append(c.clientIDs, m.ClientID), append(c.times, m.SentAt), append(c.files, string(m.Files))
	c.mentions = append(c.mentions, string(m.Mentions))
}

// writeSends is trySends' second round trip: the INSERT of the new
// messages, the rooms' last seq and activity (ur, us, ua), the senders'
// read positions (none of them when every send was a repeat), and the
// COMMIT, in one pipeline, so that the rooms' locks are held for one round
// trip less. A statement's error leaves the transaction failed: the COMMIT
// is not run (or rolls back), and the caller rolls back. The row counts
// are checked after the COMMIT: they cannot differ (a multi-row INSERT
// without ON CONFLICT adds every row or fails, and each room of the UPDATE
// was locked and read in this transaction, and rooms are never deleted);
// if one did, the batch fails with its outcome unknown, as with a lost
// connection.
func (s *Store) writeSends(ctx context.Context, tx pgx.Tx, ins *insertCols, ur []string, us []int64, ua []time.Time,
	reads map[sendPair]int64) error {
	q := s.wq.sends
	b := &pgx.Batch{}
	want := []struct {
		what string
		n    int // the rows it must change, -1 for any number
	}{{"insert messages", len(ins.rooms)}, {"update rooms", len(ur)}, {"update read positions", -1}}
	if len(ins.rooms) > 0 {
		rr, rs := make([]string, 0, len(reads)), make([]string, 0, len(reads))
		rq := make([]int64, 0, len(reads))
		for p, seq := range reads {
			rr, rs, rq = append(rr, p.room), append(rs, p.sender), append(rq, seq)
		}
		q.insert.count()
		b.Queue(q.insert.text, ins.rooms, ins.seqs, ins.ids, ins.senders, ins.names, ins.bodies, ins.clientIDs, ins.times, ins.files, ins.mentions)
		q.rooms.count()
		b.Queue(q.rooms.text, ur, us, ua)
		q.reads.count()
		b.Queue(q.reads.text, rr, rs, rq)
	} else {
		want = nil
	}
	s.wq.commit.count()
	b.Queue("commit")
	br := tx.SendBatch(ctx, b)
	defer br.Close()
	var bad error // a row count that differs, reported once the COMMIT's outcome is known
	for _, w := range want {
		tag, err := br.Exec()
		if err != nil {
			return fmt.Errorf("%s: %w", w.what, err)
		}
		if w.n >= 0 && tag.RowsAffected() != int64(w.n) && bad == nil {
			bad = fmt.Errorf("%s: %d rows, want %d", w.what, tag.RowsAffected(), w.n)
		}
	}
	if err := commitResult(br); err != nil {
		return err
	}
	if bad != nil {
		return bad
	}
	return br.Close()
}

// commitResult reads the result of a COMMIT queued in a pipeline: an error
// unless the transaction committed (a COMMIT of a failed transaction rolls
// it back without an error of its own).
func commitResult(br pgx.BatchResults) error {
	tag, err := br.Exec()
	if err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	if tag.String() != "COMMIT" {
		return fmt.Errorf("commit: %w", pgx.ErrTxCommitRollback)
	}
	return nil
}
