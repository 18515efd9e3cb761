package cache_test

import (
	"bytes"
	"context"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"parley"
)

// fakeStore is a small in-memory parley.Store with the semantics of the
// sqlite store: one writer at a time, which commits (readers see the change
// at once) and then, with the data lock released, hands the events to the
// sink before the write returns. That gap is where a cache load races with
// Apply. afterRead, when set, runs after each read has taken its snapshot
// and before it returns, so a test can commit writes right there;
// beforeSink runs between a commit and its events.
type fakeStore struct {
	sink       parley.EventSink
	afterRead  func(method string)
	beforeSink func() // runs between a write's commit and its events

	wmu sync.Mutex // serializes writes and their events: commit order

	mu       sync.RWMutex // guards the following fields
	now      int64        // unix µs of the latest write; only grows
	users    map[string]parley.User
	hashes   map[string][]byte
	tokens   map[string]parley.Token
	rooms    map[string]parley.Room
	members  map[string]map[string]parley.Member // room id -> user id
	messages map[string][]parley.Message         // room id -> by seq-1
}

func newFakeStore(sink parley.EventSink) *fakeStore {
	return &fakeStore{
		sink:     sink,
		users:    map[string]parley.User{},
		hashes:   map[string][]byte{},
		tokens:   map[string]parley.Token{},
		rooms:    map[string]parley.Room{},
		members:  map[string]map[string]parley.Member{},
		messages: map[string][]parley.Message{},
	}
}

var _ parley.Store = (*fakeStore)(nil)

// write runs f as one committed transaction and then hands its events to
// the sink.
func (f *fakeStore) write(fn func(emit func(parley.Event)) error) error {
	f.wmu.Lock()
	defer f.wmu.Unlock()
	var events []parley.Event
	f.mu.Lock()
	err := fn(func(e parley.Event) { events = append(events, e) })
	f.mu.Unlock()
	if f.beforeSink != nil {
		f.beforeSink()
	}
	if len(events) > 0 && f.sink != nil {
		f.sink(events)
	}
	return err
}

func (f *fakeStore) read(method string) {
	if f.afterRead != nil {
		f.afterRead(method)
	}
}

// tickLocked returns the time of a write; times only grow.
func (f *fakeStore) tickLocked() time.Time {
	t := parley.Now().UnixMicro()
	if t <= f.now {
		t = f.now + 1
	}
	f.now = t
	return time.UnixMicro(t).UTC()
}

func notFound(what, id string) error {
	return parley.Errorf(parley.CodeNotFound, "%s %s not found", what, id)
}

func (f *fakeStore) CreateUser(ctx context.Context, nu parley.NewUser) (parley.User, error) {
	var u parley.User
	err := f.write(func(emit func(parley.Event)) error {
		for _, o := range f.users {
			if o.Name == nu.Name {
				return parley.Errorf(parley.CodeNameTaken, "name %q is taken", nu.Name)
			}
		}
		u = parley.User{ID: parley.NewID(), Name: nu.Name, CreatedAt: f.tickLocked()}
		f.users[u.ID], f.hashes[u.ID] = u, nu.PasswordHash
		return nil
	})
	return u, err
}

func (f *fakeStore) UserByName(ctx context.Context, name string) (parley.User, []byte, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	for _, u := range f.users {
		if u.Name == name {
			return u, f.hashes[u.ID], nil
		}
	}
	return parley.User{}, nil, notFound("user", name)
}

func (f *fakeStore) User(ctx context.Context, id string) (parley.User, error) {
	f.mu.RLock()
	u, ok := f.users[id]
	f.mu.RUnlock()
	f.read("User")
	if !ok {
		return u, notFound("user", id)
	}
	return u, nil
}

func (f *fakeStore) CreateToken(ctx context.Context, t parley.Token) error {
	return f.write(func(emit func(parley.Event)) error {
		if _, ok := f.users[t.UserID]; !ok {
			return notFound("user", t.UserID)
		}
		f.tokens[string(t.Hash)] = t
		return nil
	})
}

func (f *fakeStore) RevokeToken(ctx context.Context, hash []byte) error {
	return f.write(func(emit func(parley.Event)) error {
		delete(f.tokens, string(hash))
		return nil
	})
}

func (f *fakeStore) RevokeUserTokens(ctx context.Context, userID string) error {
	return f.write(func(emit func(parley.Event)) error {
		for h, t := range f.tokens {
			if t.UserID == userID {
				delete(f.tokens, h)
			}
		}
		return nil
	})
}

func (f *fakeStore) TokenUser(ctx context.Context, hash []byte, now time.Time) (parley.User, parley.Token, error) {
	f.mu.RLock()
	t, ok := f.tokens[string(hash)]
	u := f.users[t.UserID]
	f.mu.RUnlock()
	f.read("TokenUser")
	if !ok || !now.Before(t.ExpiresAt) {
		return parley.User{}, parley.Token{}, parley.Errorf(parley.CodeUnauthorized, "unknown or expired token")
	}
	t.Hash = bytes.Clone(t.Hash)
	return u, t, nil
}

func (f *fakeStore) CreateRoom(ctx context.Context, nr parley.NewRoom) (parley.Room, bool, error) {
	var r parley.Room
	var created bool
	err := f.write(func(emit func(parley.Event)) error {
		if _, ok := f.users[nr.CreatorID]; !ok {
			return notFound("user", nr.CreatorID)
		}
		users := []string{nr.CreatorID}
		r = parley.Room{ID: parley.NewID(), Kind: nr.Kind, Title: nr.Title, Capacity: nr.Capacity}
		if nr.Kind == parley.KindDirect {
			if _, ok := f.users[nr.PeerID]; !ok {
				return notFound("user", nr.PeerID)
			}
			users = append(users, nr.PeerID)
			r.DirectKey, r.Capacity = parley.DirectKey(nr.CreatorID, nr.PeerID), 2
			for _, old := range f.rooms {
				if old.DirectKey == r.DirectKey {
					for _, u := range users {
						if _, ok := f.members[old.ID][u]; !ok {
							old = f.addMemberLocked(old, u, emit)
						}
					}
					r = old
					return nil
				}
			}
		}
		now := f.tickLocked()
		r.MemberCount, r.LastActivityAt, r.CreatedAt = len(users), now, now
		f.rooms[r.ID] = r
		f.members[r.ID] = map[string]parley.Member{}
		emit(parley.Event{Kind: parley.EventRoom, Room: r})
		for i, u := range users {
			role := parley.RoleMember
			if i == 0 && nr.Kind == parley.KindGroup {
				role = parley.RoleOwner
			}
			f.members[r.ID][u] = parley.Member{RoomID: r.ID, UserID: u, Role: role, JoinedAt: now}
			emit(parley.Event{Kind: parley.EventJoin, Room: r, UserID: u, Role: role})
		}
		created = true
		return nil
	})
	return r, created, err
}

func (f *fakeStore) addMemberLocked(r parley.Room, userID string, emit func(parley.Event)) parley.Room {
	r.MemberCount++
	f.rooms[r.ID] = r
	f.members[r.ID][userID] = parley.Member{RoomID: r.ID, UserID: userID, Role: parley.RoleMember, ReadSeq: r.LastSeq, JoinedAt: f.tickLocked()}
	emit(parley.Event{Kind: parley.EventJoin, Room: r, UserID: userID, ReadSeq: r.LastSeq, Role: parley.RoleMember})
	return r
}

func (f *fakeStore) Room(ctx context.Context, id string) (parley.Room, error) {
	f.mu.RLock()
	r, ok := f.rooms[id]
	f.mu.RUnlock()
	f.read("Room")
	if !ok {
		return r, notFound("room", id)
	}
	return r, nil
}

func (f *fakeStore) Join(ctx context.Context, roomID, userID string) (parley.Room, bool, error) {
	var r parley.Room
	var joined bool
	err := f.write(func(emit func(parley.Event)) error {
		var ok bool
		if r, ok = f.rooms[roomID]; !ok {
			return notFound("room", roomID)
		}
		if r.Kind == parley.KindDirect {
			return parley.Errorf(parley.CodeForbidden, "a direct room cannot be joined")
		}
		if _, ok := f.members[roomID][userID]; ok {
			return nil
		}
		if r.Full() {
			return parley.Errorf(parley.CodeRoomFull, "room %s is full", roomID)
		}
		r, joined = f.addMemberLocked(r, userID, emit), true
		return nil
	})
	return r, joined, err
}

func (f *fakeStore) Leave(ctx context.Context, roomID, userID string) (parley.Room, error) {
	var r parley.Room
	err := f.write(func(emit func(parley.Event)) error {
		var ok bool
		if r, ok = f.rooms[roomID]; !ok {
			return notFound("room", roomID)
		}
		if _, ok := f.members[roomID][userID]; !ok {
			return nil
		}
		delete(f.members[roomID], userID)
		r.MemberCount--
		f.rooms[roomID] = r
		emit(parley.Event{Kind: parley.EventLeave, Room: r, UserID: userID})
		return nil
	})
	return r, err
}

func (f *fakeStore) Member(ctx context.Context, roomID, userID string) (parley.Member, error) {
	f.mu.RLock()
	m, ok := f.members[roomID][userID]
	f.mu.RUnlock()
	f.read("Member")
	if !ok {
		return m, notFound("member", userID)
	}
	return m, nil
}

func (f *fakeStore) Members(ctx context.Context, roomID string) ([]string, error) {
	f.mu.RLock()
	_, ok := f.rooms[roomID]
	var ids []string
	for id := range f.members[roomID] {
		ids = append(ids, id)
	}
	f.mu.RUnlock()
	f.read("Members")
	if !ok {
		return nil, notFound("room", roomID)
	}
	return ids, nil
}

func (f *fakeStore) Memberships(ctx context.Context, userID string) ([]parley.Member, error) {
	f.mu.RLock()
	var ms []parley.Member
	for _, byUser := range f.members {
		if m, ok := byUser[userID]; ok {
			ms = append(ms, m)
		}
	}
	f.mu.RUnlock()
	f.read("Memberships")
	return ms, nil
}

func (f *fakeStore) Send(ctx context.Context, nm parley.NewMessage) (parley.Message, bool, error) {
	var msg parley.Message
	var created bool
	err := f.write(func(emit func(parley.Event)) error {
		r, ok := f.rooms[nm.RoomID]
		if !ok {
			return notFound("room", nm.RoomID)
		}
		if nm.ClientID != "" {
			for _, old := range f.messages[nm.RoomID] {
				if old.SenderID == nm.SenderID && old.ClientID == nm.ClientID {
					msg = old
					return nil
				}
			}
		}
		now := f.tickLocked()
		r.LastSeq++
		r.LastActivityAt = now
		f.rooms[r.ID] = r
		msg = parley.Message{ID: parley.NewID(), RoomID: r.ID, Seq: r.LastSeq, SenderID: nm.SenderID,
			SenderName: nm.SenderName, Body: nm.Body, ClientID: nm.ClientID, SentAt: now}
		f.messages[r.ID] = append(f.messages[r.ID], msg)
		if m, ok := f.members[r.ID][nm.SenderID]; ok && m.ReadSeq < msg.Seq {
			m.ReadSeq = msg.Seq
			f.members[r.ID][nm.SenderID] = m
		}
		emit(parley.Event{Kind: parley.EventMessage, Room: r, UserID: nm.SenderID, Message: msg})
		created = true
		return nil
	})
	return msg, created, err
}

func (f *fakeStore) Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error) {
	if p.Limit < 1 || p.Limit > parley.MaxPageLimit {
		return nil, parley.Errorf(parley.CodeInvalid, "page limit %d out of range", p.Limit)
	}
	f.mu.RLock()
	_, ok := f.rooms[roomID]
	all := f.messages[roomID]
	var out []parley.Message
	if p.Forward() {
		for _, m := range all {
			if m.Seq > p.After && len(out) < p.Limit {
				out = append(out, m)
			}
		}
	} else {
		for i := len(all) - 1; i >= 0; i-- {
			if m := all[i]; (p.Before == 0 || m.Seq < p.Before) && len(out) < p.Limit {
				out = append(out, m)
			}
		}
	}
	f.mu.RUnlock()
	f.read("Messages")
	if !ok {
		return nil, notFound("room", roomID)
	}
	return out, nil
}

func (f *fakeStore) Rooms(ctx context.Context, userID, cursor string, limit int) ([]parley.RoomEntry, string, error) {
	cur, hasCur, err := parley.ParseRoomCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	if limit < 1 || limit > parley.MaxPageLimit {
		return nil, "", parley.Errorf(parley.CodeInvalid, "limit %d out of range", limit)
	}
	f.mu.RLock()
	var all []parley.RoomEntry
	for roomID, byUser := range f.members {
		m, ok := byUser[userID]
		r := f.rooms[roomID]
		if !ok || (hasCur && cur.Before(r)) {
			continue
		}
		e := parley.RoomEntry{Room: r, Unread: parley.Unread(r, m.ReadSeq)}
		if r.LastSeq > 0 {
			last := f.messages[roomID][r.LastSeq-1]
			e.LastMessage = &last
		}
		all = append(all, e)
	}
	f.mu.RUnlock()
	f.read("Rooms")
	sort.Slice(all, func(i, j int) bool { return parley.RoomNewer(all[i].Room, all[j].Room) })
	next := ""
	if len(all) > limit {
		all = all[:limit]
		next = parley.CursorOf(all[limit-1].Room).String()
	}
	return all, next, nil
}

func (f *fakeStore) MarkRead(ctx context.Context, roomID, userID string, seq int64) (parley.Member, error) {
	var m parley.Member
	err := f.write(func(emit func(parley.Event)) error {
		var ok bool
		if m, ok = f.members[roomID][userID]; !ok {
			return notFound("member", userID)
		}
		r := f.rooms[roomID]
		if seq = min(seq, r.LastSeq); seq <= m.ReadSeq {
			return nil
		}
		m.ReadSeq = seq
		f.members[roomID][userID] = m
		emit(parley.Event{Kind: parley.EventRead, Room: r, UserID: userID, ReadSeq: seq})
		return nil
	})
	return m, err
}

func (f *fakeStore) Ping(ctx context.Context) error { return nil }
func (f *fakeStore) Close() error                   { return nil }

// counting wraps a store and counts the reads that reach it, by method.
type counting struct {
	parley.Store
	mu sync.Mutex // guards n
	n  map[string]int
	// total is the sum of n, readable without the lock.
	total atomic.Int64
}

func newCounting(inner parley.Store) *counting {
	return &counting{Store: inner, n: map[string]int{}}
}

func (c *counting) count(method string) {
	c.mu.Lock()
	c.n[method]++
	c.mu.Unlock()
	c.total.Add(1)
}

// reset zeroes the counters and returns what they held.
func (c *counting) reset() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := c.n
	c.n = map[string]int{}
	c.total.Store(0)
	return n
}

func (c *counting) User(ctx context.Context, id string) (parley.User, error) {
	c.count("User")
	return c.Store.User(ctx, id)
}

func (c *counting) UserByName(ctx context.Context, name string) (parley.User, []byte, error) {
	c.count("UserByName")
	return c.Store.UserByName(ctx, name)
}

func (c *counting) TokenUser(ctx context.Context, hash []byte, now time.Time) (parley.User, parley.Token, error) {
	c.count("TokenUser")
	return c.Store.TokenUser(ctx, hash, now)
}

func (c *counting) Room(ctx context.Context, id string) (parley.Room, error) {
	c.count("Room")
	return c.Store.Room(ctx, id)
}

func (c *counting) Member(ctx context.Context, roomID, userID string) (parley.Member, error) {
	c.count("Member")
	return c.Store.Member(ctx, roomID, userID)
}

func (c *counting) Members(ctx context.Context, roomID string) ([]string, error) {
	c.count("Members")
	return c.Store.Members(ctx, roomID)
}

func (c *counting) Memberships(ctx context.Context, userID string) ([]parley.Member, error) {
	c.count("Memberships")
	return c.Store.Memberships(ctx, userID)
}

func (c *counting) Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error) {
	c.count("Messages")
	return c.Store.Messages(ctx, roomID, p)
}

func (c *counting) Rooms(ctx context.Context, userID, cursor string, limit int) ([]parley.RoomEntry, string, error) {
	c.count("Rooms")
	return c.Store.Rooms(ctx, userID, cursor, limit)
}

// sortedIDs returns a sorted copy of ids.
func sortedIDs(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return out
}

func (f *fakeStore) React(ctx context.Context, r parley.React) (parley.Message, bool, error) {
	return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "fake: no reactions")
}

func (f *fakeStore) Reactors(ctx context.Context, roomID string, seq int64, emoji string, limit int) ([]parley.User, error) {
	return nil, nil
}

func (f *fakeStore) MyReactions(ctx context.Context, roomID, userID string, seqs []int64) (map[int64][]string, error) {
	return nil, nil
}

func (f *fakeStore) Replies(ctx context.Context, roomID string, root, after int64, limit int) ([]parley.Message, error) {
	return nil, nil
}

func (f *fakeStore) Pin(ctx context.Context, p parley.PinMessage) (parley.Message, bool, error) {
	return parley.Message{}, false, parley.Errorf(parley.CodeInvalid, "fake: no pins")
}

func (f *fakeStore) Pins(ctx context.Context, roomID string, before int64, limit int) ([]parley.Message, error) {
	return nil, nil
}

func (f *fakeStore) SetNotifyLevel(ctx context.Context, roomID, userID, level string) error {
	return nil
}

func (f *fakeStore) NotifyStates(ctx context.Context, userID string) (map[string]parley.RoomNotify, error) {
	return nil, nil
}

func (f *fakeStore) NotifyLevels(ctx context.Context, roomID string, userIDs []string) (map[string]string, error) {
	return nil, nil
}
