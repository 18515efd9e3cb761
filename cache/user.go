package cache

import (
	"context"
	"sync/atomic"
	"time"

	"parley"
)

// A userState is what the cache knows of one user: the account, and the set
// of memberships, which is either complete (membersOK) or absent. Fields
// other than used are guarded by Store.mu.
type userState struct {
	used clockBit

	user    parley.User
	hasUser bool

	members   map[string]*member // by room id; valid when membersOK
	membersOK bool
	// gen counts the changes of the membership set, readVer those of read
	// positions too; order is the room list as last sorted, at some gen, and
	// page its first page as last built.
	gen     uint64
	readVer uint64
	// notifyGen counts the notification levels set (SetNotifyLevel), so
	// that a load of mention states that began before one does not
	// install what it read (loadNotify).
	notifyGen uint64
	order     atomic.Pointer[roomOrder]
	page      atomic.Pointer[firstPage]

	backlog backlog // for the membership loads in flight
}

// member is a cached membership. joinedAt is zero when unknown: a join event
// does not carry it, so the next Member or Memberships read that needs it
// asks the inner store. mentions and level are the member's unread
// mentions and notification level, known when notifyOK and epoch is the
// room's mentionEpoch; through and change are the last seq and change of
// the room they count (mentions.go).
type member struct {
	readSeq  int64
	joinedAt time.Time
	role     string
	mentions int64
	level    string
	notifyOK bool
	epoch    uint64
	through  int64
	change   int64
}

func (u *userState) busy() bool          { return u.backlog.loads > 0 }
func (u *userState) drop()               {}
func (u *userState) clockBit() *clockBit { return &u.used }

// userLocked returns the state of user id, creating an empty one.
func (s *Store) userLocked(id string) *userState {
	u := s.users[id]
	if u == nil {
		u = &userState{}
		u.used.Store(true)
		s.users[id] = u
		evictLocked(s.users, s.maxUsers)
	}
	return u
}

// memberAfter updates a membership set for event ev of its user and reports
// whether a membership was added or removed. It is idempotent, and a read
// position only moves forward within one membership (a leave removes it, a
// later join starts another).
func memberAfter(ms map[string]*member, ev *parley.Event) bool {
	roomID := ev.Room.ID
	m := ms[roomID]
	switch ev.Kind {
	case parley.EventJoin:
		if m == nil {
			ms[roomID] = &member{readSeq: ev.ReadSeq, role: ev.Role}
			return true
		}
		m.readSeq = max(m.readSeq, ev.ReadSeq) // a loaded snapshot had this join already
	case parley.EventLeave:
		if m != nil {
			delete(ms, roomID)
			return true
		}
	case parley.EventRead:
		if m != nil {
			m.readSeq = max(m.readSeq, ev.ReadSeq)
		}
	case parley.EventRole:
		if m != nil {
			m.role = ev.Role
		}
	case parley.EventMessage:
		if m != nil {
			m.readSeq = max(m.readSeq, ev.Message.Seq)
		}
	}
	return false
}

// Member returns a membership, from memory once the user's memberships are
// loaded. Fails with CodeNotFound when the user is not a member.
func (s *Store) Member(ctx context.Context, roomID, userID string) (parley.Member, error) {
	s.mu.RLock()
	if u := s.users[userID]; u != nil && u.membersOK {
		m := u.members[roomID]
		if m == nil || !m.joinedAt.IsZero() {
			u.used.Store(true)
			var got parley.Member
			if m != nil {
				got = parley.Member{RoomID: roomID, UserID: userID, Role: m.role, ReadSeq: m.readSeq, JoinedAt: m.joinedAt}
			}
			s.mu.RUnlock()
			s.metrics.hit(kindMember)
			if m == nil {
				return parley.Member{}, notMember(roomID)
			}
			return got, nil
		}
	}
	s.mu.RUnlock()
	s.metrics.miss(kindMember)
	ms, err := s.loadMemberships(ctx, userID)
	if err != nil {
		return parley.Member{}, err
	}
	for _, m := range ms {
		if m.RoomID == roomID {
			return m, nil
		}
	}
	return parley.Member{}, notMember(roomID)
}

func notMember(roomID string) error {
	return parley.Errorf(parley.CodeNotFound, "not a member of room %s", roomID)
}

// Memberships returns every membership of the user, from memory after the
// first read (unless a join's time is not known yet).
func (s *Store) Memberships(ctx context.Context, userID string) ([]parley.Member, error) {
	s.mu.RLock()
	if u := s.users[userID]; u != nil && u.membersOK {
		out := make([]parley.Member, 0, len(u.members))
		for roomID, m := range u.members {
			if m.joinedAt.IsZero() {
				break
			}
			out = append(out, parley.Member{RoomID: roomID, UserID: userID, Role: m.role, ReadSeq: m.readSeq, JoinedAt: m.joinedAt})
		}
		if len(out) == len(u.members) {
			u.used.Store(true)
			s.mu.RUnlock()
			s.metrics.hit(kindMemberships)
			return out, nil
		}
	}
	s.mu.RUnlock()
	s.metrics.miss(kindMemberships)
	return s.loadMemberships(ctx, userID)
}

// loadMemberships reads the user's memberships from the inner store and
// returns them. If the set is not cached it installs the snapshot with the
// events committed meanwhile replayed on top. If it is cached (and kept
// current by events) it only fills in unknown join times, for memberships
// that no join or leave has touched since the load began: a membership that
// left and rejoined meanwhile is another one, with another time.
func (s *Store) loadMemberships(ctx context.Context, userID string) ([]parley.Member, error) {
	s.mu.Lock()
	u := s.userLocked(userID)
	start := u.backlog.begin()
	s.mu.Unlock()

	ms, err := s.inner.Memberships(ctx, userID)

	s.mu.Lock()
	defer s.mu.Unlock()
	if backlog, ok := u.backlog.since(start); ok && err == nil && s.users[userID] == u {
		if !u.membersOK {
			set := make(map[string]*member, len(ms))
			for _, m := range ms {
				set[m.RoomID] = &member{readSeq: m.ReadSeq, joinedAt: m.JoinedAt, role: m.Role}
			}
			for i := range backlog {
				memberAfter(set, &backlog[i])
			}
			u.members, u.membersOK = set, true
			u.gen++
		} else {
			for _, m := range ms {
				if c := u.members[m.RoomID]; c != nil && c.joinedAt.IsZero() && !joinedOrLeft(backlog, m.RoomID) {
					c.joinedAt = m.JoinedAt
				}
			}
		}
	}
	u.backlog.end()
	return ms, err
}

// joinedOrLeft reports whether the user's backlog has a join or a leave of
// the room.
func joinedOrLeft(backlog []parley.Event, roomID string) bool {
	for i := range backlog {
		if k := backlog[i].Kind; (k == parley.EventJoin || k == parley.EventLeave) && backlog[i].Room.ID == roomID {
			return true
		}
	}
	return false
}

// RevokeToken revokes the token in the inner store, then forgets it. A
// TokenUser load that began before the revocation committed may have read
// the token: the count of revocations, moved under the lock after the
// commit, keeps it from installing that (it answers its own caller, which
// asked before the revocation returned). So from the moment RevokeToken
// returns, no read of this cache accepts the token.
func (s *Store) RevokeToken(ctx context.Context, hash []byte) error {
	err := s.inner.RevokeToken(ctx, hash)
	s.mu.Lock()
	s.revoked++
	delete(s.tokens, string(hash))
	s.mu.Unlock()
	return err
}

// RevokeUserTokens revokes every token of the user in the inner store,
// then forgets them as RevokeToken does, and the user's record. Tokens are cached by hash alone,
// so this walks them all (at most Config.MaxTokens): logging out
// everywhere is rare enough not to need a second index.
func (s *Store) RevokeUserTokens(ctx context.Context, userID string) error {
	err := s.inner.RevokeUserTokens(ctx, userID)
	s.mu.Lock()
	s.revoked++
	for hash, t := range s.tokens {
		if t.user.ID == userID {
			delete(s.tokens, hash)
		}
	}
	// And the user: a deleted account (DeleteAccount revokes its tokens
	// after the rename too) is renamed.
	if u := s.users[userID]; u != nil {
		u.hasUser = false
	}
	s.mu.Unlock()
	return err
}
