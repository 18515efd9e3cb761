package cache

import (
	"context"

	"parley"
)

// The member listing of a room (RoomMembers) is cached per room beside its
// member ids: every member's role, read position, joined time and name.
// Events keep it exact: a join adds a member with the event's role, a leave
// (a removal too) drops one, a role change sets the role, and reads and the
// sender's own messages raise read positions. A join event carries neither
// the member's joined time nor their name, so the first listing after joins
// reads the whole listing again (one query), and keeps it.

// listed is one member of a cached listing. joinedAt is zero and name empty
// until known.
type listed struct {
	m    parley.RoomMember
	name bool // m.Name is known
}

// listAfter updates a room's listing for event ev. It is idempotent, as
// membersAfter is.
func listAfter(list map[string]*listed, ev *parley.Event) {
	switch ev.Kind {
	case parley.EventRoom:
		clear(list)
	case parley.EventJoin:
		if list[ev.UserID] == nil {
			list[ev.UserID] = &listed{m: parley.RoomMember{Member: parley.Member{
				RoomID: ev.Room.ID, UserID: ev.UserID, Role: ev.Role, ReadSeq: ev.ReadSeq,
			}}}
		}
	case parley.EventLeave:
		delete(list, ev.UserID)
	case parley.EventRole:
		if l := list[ev.UserID]; l != nil {
			l.m.Role = ev.Role
		}
	case parley.EventRead:
		if l := list[ev.UserID]; l != nil {
			l.m.ReadSeq = max(l.m.ReadSeq, ev.ReadSeq)
		}
	case parley.EventMessage:
		if l := list[ev.Message.SenderID]; l != nil {
			l.m.ReadSeq = max(l.m.ReadSeq, ev.Message.Seq)
		}
	}
}

// RoomMembers returns the room's member listing, from memory after the
// first read. A listing that holds a member whose name or joined time is not
// known (a join since it was read) is read again from the inner store, once,
// and kept. The slice is the caller's.
func (s *Store) RoomMembers(ctx context.Context, roomID string) ([]parley.RoomMember, error) {
	if out, ok := s.cachedList(roomID); ok {
		s.metrics.hit(kindRoomMembers)
		return out, nil
	}
	s.metrics.miss(kindRoomMembers)
	return s.loadList(ctx, roomID)
}

// cachedList copies the room's listing; ok is false when it is not cached
// or an entry's name or joined time is not known.
func (s *Store) cachedList(roomID string) ([]parley.RoomMember, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.rooms[roomID]
	if st == nil || !st.listOK {
		return nil, false
	}
	out := make([]parley.RoomMember, 0, len(st.list))
	for _, l := range st.list {
		if !l.name || l.m.JoinedAt.IsZero() {
			return nil, false
		}
		out = append(out, l.m)
	}
	st.used.Store(true)
	return out, true
}

// loadList reads the room's listing from the inner store and caches it,
// in place of what is cached, with the events committed meanwhile replayed
// on top: the result is as current as the events.
func (s *Store) loadList(ctx context.Context, roomID string) ([]parley.RoomMember, error) {
	st, start := s.beginRoomLoad(roomID)
	ms, err := s.inner.RoomMembers(ctx, roomID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if events, ok := st.backlog.since(start); ok && err == nil && s.rooms[roomID] == st {
		list := make(map[string]*listed, len(ms))
		for _, m := range ms {
			list[m.UserID] = &listed{m: m, name: true}
		}
		for i := range events {
			listAfter(list, &events[i])
		}
		st.list, st.listOK = list, true
	}
	s.endRoomLoadLocked(roomID, st)
	return ms, err
}

// UpdateRoom passes through to the inner store; its event updates the
// room's info.
func (s *Store) UpdateRoom(ctx context.Context, roomID, actorID string, u parley.RoomUpdate) (parley.Room, error) {
	return s.inner.UpdateRoom(ctx, roomID, actorID, u)
}

// SetRole passes through to the inner store; its event updates the
// listing and the membership.
func (s *Store) SetRole(ctx context.Context, roomID, actorID, userID, role string) (parley.Member, error) {
	return s.inner.SetRole(ctx, roomID, actorID, userID, role)
}

// RemoveMember passes through to the inner store; its leave event updates
// the cache as any leave does.
func (s *Store) RemoveMember(ctx context.Context, roomID, actorID, userID string, ban bool) (parley.Room, error) {
	return s.inner.RemoveMember(ctx, roomID, actorID, userID, ban)
}

// Unban passes through to the inner store.
func (s *Store) Unban(ctx context.Context, roomID, actorID, userID string) error {
	return s.inner.Unban(ctx, roomID, actorID, userID)
}

// Bans passes through to the inner store: only moderators read it, rarely.
func (s *Store) Bans(ctx context.Context, roomID string) ([]parley.Ban, error) {
	return s.inner.Bans(ctx, roomID)
}
