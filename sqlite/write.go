package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"

	"parley"
	"parley/groupcommit"
	"parley/storagefull"
)

// writeFunc is one write, run by the writer inside the batch's transaction.
// It checks its preconditions before it changes anything, so that a
// *parley.Error it returns leaves the transaction as it found it. Any other
// error may leave the write half done and makes commit drop it.
type writeFunc func(w *wtx) (result, error)

// writeOp is one write of a batch: a Send, which the writer runs grouped
// with the Sends next to it (see send.go), or any other write.
type writeOp struct {
	send *parley.NewMessage
	f    writeFunc
}

// result is the outcome of a write; each write fills what it returns.
type result struct {
	user   parley.User
	room   parley.Room
	member parley.Member
	msg    parley.Message
	ok     bool // created, joined
}

// write runs f in the next batch and waits until it is committed: a
// request (storagefull.Request).
func (s *Store) write(ctx context.Context, f writeFunc) (result, error) {
	return s.writeBy(ctx, storagefull.Request, f)
}

// writeBy is write for the writer w (storagefull.Indexer: the search
// indexer's rounds).
func (s *Store) writeBy(ctx context.Context, w storagefull.Writer, f writeFunc) (result, error) {
	res, err := s.w.Do(ctx, writeOp{f: f})
	return res, s.writeErr(w, err)
}

// Synced returns once every write committed before the call is durable:
// an empty write through the writer, which returns after its batch's
// flush (with SyncFull, the WAL's fsync, which covers every commit before
// it; with less, at its commit). A reader sees a commit as soon as it is
// made, before that fsync, so a reader that hands what it read to the
// outside, which cannot take it back after a power loss (the outgoing
// webhooks), calls it first. Under load it rides in a batch of sends.
// It is not a write to writeErr: an empty transaction that commits says
// nothing of free space, and must not end a full disk's state.
func (s *Store) Synced(ctx context.Context) error {
	_, err := s.w.Do(ctx, writeOp{f: func(*wtx) (result, error) { return result{}, nil }})
	if errors.Is(err, groupcommit.ErrClosed) {
		return errClosed
	}
	return err
}

// commit is the group-commit function: it runs the batch in one
// transaction; once that is durable, its events go to OnCommit.
func (s *Store) commit(batch []*groupcommit.Request[writeOp, result]) (done func(), err error) {
	s.txMu.Lock()
	defer s.txMu.Unlock()
	pending, grouped := batch, true
	for {
		events, blame, err := s.tryBatch(pending, grouped)
		switch {
		case err == nil:
			s.ck.wrote()
			if s.onCommit == nil || len(events) == 0 {
				return nil, nil
			}
			return func() { s.onCommit(events) }, nil
		case blame == regroup:
			// A grouped statement broke a constraint: run the batch
			// again one Send at a time to find the culprit.
			grouped = false
		case blame < 0:
			return nil, err
		default:
			// One write broke a constraint half-way: drop it, run the
			// rest again. Each round drops one write.
			pending[blame].Err = err
			pending = slices.Delete(slices.Clone(pending), blame, blame+1)
			if len(pending) == 0 {
				return nil, nil
			}
		}
	}
}

// Blame values of tryBatch besides a write's index.
const (
	wholeBatch = -1 // begin or commit failed, or an I/O error: fail the batch
	regroup    = -2 // a group of Sends broke a constraint: retry ungrouped
)

// tryBatch runs reqs in one transaction, Sends in groups when grouped. On
// failure it has rolled back and returns the index of the write to blame,
// wholeBatch or regroup.
func (s *Store) tryBatch(reqs []*groupcommit.Request[writeOp, result], grouped bool) ([]parley.Event, int, error) {
	s.wq.begin.count()
	tx, err := s.wdb.BeginTx(context.Background(), nil)
	if err != nil {
		return nil, wholeBatch, fmt.Errorf("begin: %w", err)
	}
	w := &wtx{s: s, tx: tx, stmts: make([]*sql.Stmt, s.nwq), args: s.args, events: make([]parley.Event, 0, sends(reqs))}
	defer func() { clear(w.args); s.args = w.args[:0] }()
	fail := func(blame int, err error) ([]parley.Event, int, error) {
		s.wq.rollback.count()
		tx.Rollback()
		if !isConstraint(err) {
			blame = wholeBatch
		}
		return nil, blame, err
	}
	first := 0 // of the pending group of Sends
	flush := func(end int) error {
		if first == end {
			return nil
		}
		err := w.flushSends(reqs[first:end])
		first = end
		return err
	}
	for i, r := range reqs {
		if r.In.send != nil {
			if !grouped {
				if err := w.flushSends(reqs[i : i+1]); err != nil {
					return fail(i, err)
				}
				first = i + 1
			}
			continue
		}
		if err := flush(i); err != nil {
			return fail(regroup, err)
		}
		first = i + 1
		r.Out, r.Err = r.In.f(w)
		var pe *parley.Error
		if r.Err != nil && !errors.As(r.Err, &pe) {
			return fail(i, r.Err)
		}
	}
	if err := flush(len(reqs)); err != nil {
		return fail(regroup, err)
	}
	s.wq.commit.count()
	if err := tx.Commit(); err != nil {
		return nil, wholeBatch, fmt.Errorf("commit: %w", err)
	}
	if s.idx != nil {
		s.idx.sent(w.sent, w.nsent)
	}
	return w.events, 0, nil
}

// sends counts the Sends of a batch: each stored one emits one event, so
// the batch's events are allocated once rather than grown by doubling
// (the largest allocation per message otherwise).
func sends(reqs []*groupcommit.Request[writeOp, result]) int {
	n := 0
	for _, r := range reqs {
		if r.In.send != nil {
			n++
		}
	}
	return n
}

// wtx is the writer's view of the batch's transaction.
type wtx struct {
	s      *Store
	tx     *sql.Tx
	stmts  []*sql.Stmt // the writer's statements bound to tx, by query.idx
	events []parley.Event
	args   []any // a buffer for the grouped statements' arguments
	// sent are the rooms this transaction stored messages in, nsent how
	// many: the search indexer's notes once it commits (indexer.go).
	sent  map[string]struct{}
	nsent int
}

// stmt returns q bound to the transaction and counts one execution.
func (w *wtx) stmt(q *query) *sql.Stmt {
	st := w.stmts[q.idx]
	if st == nil {
		st = w.tx.Stmt(q.stmt)
		w.stmts[q.idx] = st
	}
	q.count()
	return st
}

func (w *wtx) exec(q *query, args ...any) (sql.Result, error) { return w.stmt(q).Exec(args...) }
func (w *wtx) row(q *query, args ...any) *sql.Row             { return w.stmt(q).QueryRow(args...) }
func (w *wtx) emit(e parley.Event)                            { w.events = append(w.events, e) }

// now returns the time of a write in unix microseconds. The writer's times
// only grow, so commit order and activity order agree.
func (w *wtx) now() int64 {
	t := parley.Now().UnixMicro()
	if t <= w.s.lastNow {
		t = w.s.lastNow + 1
	}
	w.s.lastNow = t
	return t
}

// userName returns the name of user id, CodeNotFound if there is none.
func (w *wtx) userName(id string) (string, error) {
	var name string
	err := w.row(w.s.wq.userName, id).Scan(&name)
	if errors.Is(err, sql.ErrNoRows) {
		return "", parley.Errorf(parley.CodeNotFound, "user %s not found", id)
	}
	return name, err
}

// liveUser fails with CodeNotFound unless user id exists and has not been
// deleted (DeleteUser renames it): no token or room is made for a deleted
// account, even by a login whose password was checked before it went.
func (w *wtx) liveUser(id string) error {
	var one int
	err := w.row(w.s.wq.liveUser, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return parley.Errorf(parley.CodeNotFound, "user %s not found", id)
	}
	return err
}

// room returns room id, CodeNotFound if there is none.
func (w *wtx) room(id string) (parley.Room, error) {
	r, err := scanRoom(w.row(w.s.wq.room, id))
	if errors.Is(err, sql.ErrNoRows) {
		return r, errRoomNotFound(id)
	}
	return r, err
}

// member returns the membership, and false if there is none.
func (w *wtx) member(roomID, userID string) (parley.Member, bool, error) {
	m := parley.Member{RoomID: roomID, UserID: userID}
	var joined int64
	err := w.row(w.s.wq.member, roomID, userID).Scan(&m.ReadSeq, &joined, &m.Role)
	if errors.Is(err, sql.ErrNoRows) {
		return m, false, nil
	}
	m.JoinedAt = fromMicro(joined)
	return m, err == nil, err
}

// addMember adds userID to room r, which must have a free seat and not have
// the user yet, and returns the room after it.
func (w *wtx) addMember(r parley.Room, userID string) (parley.Room, error) {
	after, err := scanRoom(w.row(w.s.wq.joinCount, r.ID))
	if errors.Is(err, sql.ErrNoRows) {
		return r, parley.Errorf(parley.CodeRoomFull, "room %s is full", r.ID)
	}
	if err != nil {
		return r, err
	}
	now := w.now()
	if _, err := w.exec(w.s.wq.insertMember, r.ID, userID, after.LastSeq, now, parley.RoleMember); err != nil {
		return r, err
	}
	m := parley.Member{RoomID: r.ID, UserID: userID, Role: parley.RoleMember, ReadSeq: after.LastSeq, JoinedAt: fromMicro(now)}
	err = w.record(parley.Event{Kind: parley.EventJoin, Room: after, UserID: userID, ReadSeq: after.LastSeq, Role: parley.RoleMember}, m)
	return after, err
}

func errRoomNotFound(id string) error {
	return parley.Errorf(parley.CodeNotFound, "room not found")
}

// CreateUser implements parley.Store.
func (s *Store) CreateUser(ctx context.Context, nu parley.NewUser) (parley.User, error) {
	if nu.Name == "" {
		return parley.User{}, parley.Errorf(parley.CodeInvalid, "empty user name")
	}
	hash := nu.PasswordHash
	if hash == nil {
		hash = []byte{}
	}
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		now := w.now()
		taken := parley.Errorf(parley.CodeNameTaken, "name %q is taken", nu.Name)
		if nu.ID != "" {
			taken = parley.Errorf(parley.CodeConflict, "user id %s or name %q is taken", nu.ID, nu.Name)
		}
		if held, err := w.nameHeld(nu.Name, now); err != nil || held {
			if err == nil {
				err = taken
			}
			return result{}, err
		}
		u := parley.User{ID: nu.ID, Name: nu.Name, CreatedAt: fromMicro(now)}
		if u.ID == "" {
			u.ID = parley.NewID()
		}
		_, err := w.exec(w.s.wq.insertUser, u.ID, u.Name, hash, now)
		if isConstraint(err) { // the unique name or id; the statement was undone
			return result{}, taken
		}
		if err != nil {
			return result{}, fmt.Errorf("create user: %w", err)
		}
		return result{user: u}, nil
	})
	return res.user, err
}

// CreateToken implements parley.Store. It fails with CodeNotFound for an
// unknown user and CodeConflict for a hash stored already.
func (s *Store) CreateToken(ctx context.Context, t parley.Token) error {
	if len(t.Hash) == 0 {
		return parley.Errorf(parley.CodeInvalid, "empty token hash")
	}
	_, err := s.write(ctx, func(w *wtx) (result, error) {
		if err := w.liveUser(t.UserID); err != nil {
			return result{}, err
		}
		created := t.CreatedAt
		if created.IsZero() {
			created = fromMicro(w.now())
		}
		_, err := w.exec(w.s.wq.insertToken, t.Hash, t.UserID, created.UnixMicro(), t.ExpiresAt.UnixMicro())
		if isConstraint(err) { // the user exists: the hash is taken
			return result{}, parley.Errorf(parley.CodeConflict, "token exists")
		}
		if err != nil {
			return result{}, fmt.Errorf("create token: %w", err)
		}
		return result{}, nil
	})
	return err
}

// CreateRoom implements parley.Store. A direct room has capacity 2. Asking
// again for a direct room one of the pair has left adds them back.
func (s *Store) CreateRoom(ctx context.Context, nr parley.NewRoom) (parley.Room, bool, error) {
	switch {
	case nr.Kind != parley.KindGroup && nr.Kind != parley.KindDirect:
		return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "unknown room kind %q", nr.Kind)
	case nr.Capacity < 0:
		return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "negative capacity")
	case nr.Kind == parley.KindDirect && (nr.PeerID == "" || nr.PeerID == nr.CreatorID):
		return parley.Room{}, false, parley.Errorf(parley.CodeInvalid, "a direct room needs a peer other than its creator")
	}
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		r, created, err := w.createRoom(nr)
		if err != nil {
			return result{}, err
		}
		return result{room: r, ok: created}, nil
	})
	return res.room, res.ok, err
}

func (w *wtx) createRoom(nr parley.NewRoom) (parley.Room, bool, error) {
	if err := w.liveUser(nr.CreatorID); err != nil {
		return parley.Room{}, false, err
	}
	users := []string{nr.CreatorID}
	r := parley.Room{ID: parley.NewID(), Kind: nr.Kind, Title: nr.Title, Capacity: nr.Capacity}
	if nr.Kind == parley.KindDirect {
		if err := w.liveUser(nr.PeerID); err != nil {
			return parley.Room{}, false, err
		}
		users = append(users, nr.PeerID)
		r.DirectKey, r.Capacity = parley.DirectKey(nr.CreatorID, nr.PeerID), 2
		old, err := scanRoom(w.row(w.s.wq.roomByDirectKey, r.DirectKey))
		if err == nil {
			for _, u := range users {
				if _, ok, err := w.member(old.ID, u); err != nil {
					return old, false, err
				} else if !ok {
					if old, err = w.addMember(old, u); err != nil {
						return old, false, fmt.Errorf("create room: %w", err)
					}
				}
			}
			return old, false, nil
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return r, false, fmt.Errorf("create room: %w", err)
		}
	}
	now := w.now()
	r.MemberCount, r.LastActivityAt, r.CreatedAt = len(users), fromMicro(now), fromMicro(now)
	if _, err := w.exec(w.s.wq.insertRoom, r.ID, r.Kind, r.Title, r.Capacity, r.MemberCount, now, now, r.DirectKey); err != nil {
		return r, false, fmt.Errorf("create room: %w", err)
	}
	if err := w.record(parley.Event{Kind: parley.EventRoom, Room: r}, parley.Member{}); err != nil {
		return r, false, err
	}
	for i, u := range users {
		role := parley.RoleMember
		if i == 0 && r.Kind == parley.KindGroup {
			role = parley.RoleOwner
		}
		if _, err := w.exec(w.s.wq.insertMember, r.ID, u, 0, now, role); err != nil {
			return r, false, fmt.Errorf("create room: %w", err)
		}
		m := parley.Member{RoomID: r.ID, UserID: u, Role: role, JoinedAt: fromMicro(now)}
		if err := w.record(parley.Event{Kind: parley.EventJoin, Room: r, UserID: u, Role: role}, m); err != nil {
			return r, false, err
		}
	}
	return r, true, nil
}

// Join implements parley.Store. A new member's read position is the room's
// last seq: only later messages are unread.
func (s *Store) Join(ctx context.Context, roomID, userID string) (parley.Room, bool, error) {
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		r, err := w.room(roomID)
		if err != nil {
			return result{}, err
		}
		if r.Kind == parley.KindDirect {
			return result{}, parley.Errorf(parley.CodeForbidden, "a direct room cannot be joined")
		}
		if _, ok, err := w.member(roomID, userID); err != nil || ok {
			return result{room: r}, err
		}
		if err := w.notBanned(roomID, userID); err != nil {
			return result{}, err
		}
		if r.Full() {
			return result{}, parley.Errorf(parley.CodeRoomFull, "room %s is full", roomID)
		}
		r, err = w.addMember(r, userID)
		if err != nil {
			return result{}, err
		}
		return result{room: r, ok: true}, nil
	})
	return res.room, res.ok, err
}

// Leave implements parley.Store.
func (s *Store) Leave(ctx context.Context, roomID, userID string) (parley.Room, error) {
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		r, err := w.room(roomID)
		if err != nil {
			return result{}, err
		}
		r, _, err = w.removeMember(r, userID, parley.Event{Kind: parley.EventLeave, UserID: userID})
		if err != nil {
			return result{}, fmt.Errorf("leave: %w", err)
		}
		return result{room: r}, nil
	})
	return res.room, err
}

// Send implements parley.Store. Its event is one EventMessage; the sender's
// read position moves to the message's seq with it (no EventRead).
func (s *Store) Send(ctx context.Context, m parley.NewMessage) (parley.Message, bool, error) {
	if m.ReplyTo > 0 {
		return s.sendReply(ctx, m) // replies.go
	}
	res, err := s.w.Do(ctx, writeOp{send: &m})
	return res.msg, res.ok, s.writeErr(storagefull.Request, err)
}

// MarkRead implements parley.Store.
func (s *Store) MarkRead(ctx context.Context, roomID, userID string, seq int64) (parley.Member, error) {
	res, err := s.write(ctx, func(w *wtx) (result, error) {
		m := parley.Member{RoomID: roomID, UserID: userID}
		var joined int64
		err := w.row(w.s.wq.markRead, roomID, userID, seq).Scan(&m.ReadSeq, &joined, &m.Role)
		if errors.Is(err, sql.ErrNoRows) { // not a member, or nothing to move
			m, ok, err := w.member(roomID, userID)
			if err == nil && !ok {
				err = parley.Errorf(parley.CodeNotFound, "user %s is not a member of room %s", userID, roomID)
			}
			return result{member: m}, err
		}
		if err != nil {
			return result{}, fmt.Errorf("mark read: %w", err)
		}
		m.JoinedAt = fromMicro(joined)
		r, err := w.room(roomID)
		if err != nil {
			return result{}, fmt.Errorf("mark read: %w", err)
		}
		w.emit(parley.Event{Kind: parley.EventRead, Room: r, UserID: userID, ReadSeq: m.ReadSeq})
		return result{member: m}, nil
	})
	return res.member, err
}
