package cache

import (
	"context"
	"slices"

	"parley"
)

// A roomState is what the cache knows of one room. Each part is valid on its
// own: the info (from any event, or loaded), the member ids, the window of
// recent messages. Fields other than used are guarded by Store.mu.
type roomState struct {
	used clockBit

	room    parley.Room
	hasRoom bool
	ver     uint64 // counts the changes of room, for the room lists built from it
	// ids is the member id set. It is handed to callers of Members, so it is
	// never modified: a change replaces it. Valid when idsOK.
	ids   []string
	idsOK bool
	win   window
	// list is the member listing (people.go), valid when listOK.
	list   map[string]*listed
	listOK bool

	// idx is the room's search index (search.go), nil until a search
	// builds it; idxOwner is the budget it counts against.
	idx      *roomIndex
	idxOwner *searchIndexes
	idxBuild chan struct{} // closed when the build in flight ends; nil if none

	backlog backlog // for the loads of any part in flight
	gone    bool    // removed from Store.rooms: events no longer reach it

	// mentionEpoch is the room's epoch of mention states (mentions.go): a
	// member's state counted at another one is unknown. Each new state
	// and each change Apply cannot count takes a new one (Store.epochs).
	mentionEpoch uint64
}

func (st *roomState) busy() bool          { return st.backlog.loads > 0 }
func (st *roomState) drop()               { st.gone = true; st.idxOwner.forget(st) }
func (st *roomState) clockBit() *clockBit { return &st.used }
func (st *roomState) empty() bool {
	return !st.hasRoom && !st.idsOK && !st.win.ok && !st.listOK && st.idx == nil
}

// roomLocked returns the state of room id, creating an empty one.
func (s *Store) roomLocked(id string) *roomState {
	st := s.rooms[id]
	if st == nil {
		st = &roomState{}
		st.used.Store(true) // a new key is not the next victim
		s.epochs++
		st.mentionEpoch = s.epochs
		s.rooms[id] = st
		evictLocked(s.rooms, s.maxRooms)
	}
	return st
}

// beginRoomLoad registers a load of a part of room id and returns its state
// and the backlog position the load's replay starts from.
func (s *Store) beginRoomLoad(id string) (*roomState, int) {
	s.mu.Lock()
	st := s.roomLocked(id)
	start := st.backlog.begin()
	s.mu.Unlock()
	return st, start
}

// endRoomLoadLocked unregisters a load; the last one drops the backlog, and
// an entry left holding nothing (the room does not exist) is removed.
func (s *Store) endRoomLoadLocked(id string, st *roomState) {
	st.backlog.end()
	if st.backlog.loads == 0 && st.empty() && s.rooms[id] == st {
		delete(s.rooms, id)
		st.drop()
	}
}

// Room returns a room's info, from memory after the first read. Events keep
// it current; a room created through this store never reaches the inner
// store for it.
func (s *Store) Room(ctx context.Context, id string) (parley.Room, error) {
	s.mu.RLock()
	if st := s.rooms[id]; st != nil && st.hasRoom {
		st.used.Store(true)
		r := st.room
		s.mu.RUnlock()
		s.metrics.hit(kindRoom)
		return r, nil
	}
	s.mu.RUnlock()
	s.metrics.miss(kindRoom)
	return s.loadRoom(ctx, id)
}

// loadRoom reads a room's info from the inner store and caches it unless an
// event has set it meanwhile: every event carries the room's whole info, so
// the event's value is current and the load is not needed.
func (s *Store) loadRoom(ctx context.Context, id string) (parley.Room, error) {
	st, _ := s.beginRoomLoad(id)
	r, err := s.inner.Room(ctx, id)
	s.mu.Lock()
	if err == nil && !st.hasRoom && s.rooms[id] == st {
		st.room, st.hasRoom = r, true
		st.ver++
	}
	s.endRoomLoadLocked(id, st)
	s.mu.Unlock()
	return r, err
}

// Members returns the ids of the room's members, from memory after the
// first read. The slice is shared by every caller and replaced, never
// changed, when the members change: callers must not modify it.
func (s *Store) Members(ctx context.Context, roomID string) ([]string, error) {
	s.mu.RLock()
	if st := s.rooms[roomID]; st != nil && st.idsOK {
		st.used.Store(true)
		ids := st.ids[:len(st.ids):len(st.ids)]
		s.mu.RUnlock()
		s.metrics.hit(kindMembers)
		return ids, nil
	}
	s.mu.RUnlock()
	s.metrics.miss(kindMembers)

	st, start := s.beginRoomLoad(roomID)
	ids, err := s.inner.Members(ctx, roomID)
	s.mu.Lock()
	defer s.mu.Unlock()
	if events, ok := st.backlog.since(start); ok && err == nil && !st.idsOK && s.rooms[roomID] == st {
		cached := slices.Clone(ids) // the caller owns ids
		for i := range events {
			cached = membersAfter(cached, &events[i])
		}
		st.ids, st.idsOK = cached, true
	}
	s.endRoomLoadLocked(roomID, st)
	return ids, err
}

// membersAfter returns the member id set after event ev, copying ids if ev
// changes it. It is idempotent: a join of a member or a leave of a
// non-member returns ids itself.
func membersAfter(ids []string, ev *parley.Event) []string {
	switch ev.Kind {
	case parley.EventRoom:
		return []string{}
	case parley.EventJoin:
		if slices.Contains(ids, ev.UserID) {
			return ids
		}
		out := make([]string, len(ids), len(ids)+1)
		copy(out, ids)
		return append(out, ev.UserID)
	case parley.EventLeave:
		i := slices.Index(ids, ev.UserID)
		if i < 0 {
			return ids
		}
		out := make([]string, 0, len(ids)-1)
		out = append(out, ids[:i]...)
		return append(out, ids[i+1:]...)
	}
	return ids
}
