package cache

import (
	"context"
	"slices"

	"parley"
)

// Rooms returns the user's room list, from memory once the user's
// memberships, their rooms and each room's last message are cached; a miss
// loads what is missing and then serves from memory. Lists the cache cannot
// serve (a bad limit or cursor, parts that stay missing) come from the inner
// store. Each LastMessage, and the first page (no cursor) while nothing in it
// changes, is shared by every caller: callers must not modify them.
func (s *Store) Rooms(ctx context.Context, userID string, cursor string, limit int) ([]parley.RoomEntry, string, error) {
	cur, hasCur, err := parley.ParseRoomCursor(cursor)
	if err != nil || limit < 1 || limit > parley.MaxPageLimit {
		s.metrics.miss(kindRooms)
		return s.inner.Rooms(ctx, userID, cursor, limit)
	}
	for attempt := range 3 {
		entries, next, missing, notify, ok := s.cachedRooms(userID, cur, hasCur, limit)
		if ok {
			if attempt == 0 {
				s.metrics.hit(kindRooms)
			}
			return entries, next, nil
		}
		if attempt == 0 {
			s.metrics.miss(kindRooms)
		}
		if err := s.warmRooms(ctx, userID, missing, notify); err != nil {
			break
		}
	}
	return s.inner.Rooms(ctx, userID, cursor, limit)
}

// A roomOrder is a user's room list as last sorted: their rooms, newest
// activity first as of then. It is immutable; a read that finds the order
// changed (new activity) sorts it again and stores a new one, and a change of
// the membership set (gen) or an evicted room makes it be rebuilt. It spares
// the room list its map lookups and, in steady state, its sort.
type roomOrder struct {
	gen  uint64
	refs []listRef
}

// A listRef is one room of a room list.
type listRef struct {
	id string
	st *roomState
	m  *member
}

// A listKey is a room of a room list while it is sorted: its last activity
// and its index in the order's refs. It holds no pointer, so that sorting
// moves 16 bytes and needs no write barrier.
type listKey struct {
	at int64 // last activity, Unix ns
	i  int
}

// newer orders keys as parley.RoomNewer orders their rooms.
func (o *roomOrder) newer(a, b listKey) bool {
	if a.at != b.at {
		return a.at > b.at
	}
	return o.refs[a.i].id > o.refs[b.i].id
}

// buildOrderLocked makes a user's room order afresh, unsorted, or returns
// the rooms that are not cached.
func (s *Store) buildOrderLocked(u *userState) (*roomOrder, []string) {
	o := &roomOrder{gen: u.gen, refs: make([]listRef, 0, len(u.members))}
	var missing []string
	for id, m := range u.members {
		st := s.rooms[id]
		if st == nil {
			missing = append(missing, id)
			continue
		}
		o.refs = append(o.refs, listRef{id: id, st: st, m: m})
	}
	return o, missing
}

// cachedRooms builds the room list from the cache. If something is missing it
// returns ok false and the rooms whose info or last message is missing (nil
// when the memberships themselves are missing), and notify true when a
// membership's mention state is (mentions.go). It allocates only the
// entries: each LastMessage points into the room's window, whose messages are
// never changed once stored.
//
// It holds s.mu for reading only, yet stores into atomics (the user's order
// and first page, the used marks): Apply, the only writer of the states,
// holds s.mu for writing, so the states cannot change meanwhile, and what
// each reader stores is derived from those same states alone. Two readers
// racing store equally valid values (the same rooms in the same order, the
// same page); the last one wins, and a later reader checks gen and the
// versions before it trusts either.
func (s *Store) cachedRooms(userID string, cur parley.RoomCursor, hasCur bool, limit int) (entries []parley.RoomEntry, next string, missing []string, notify, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u := s.users[userID]
	if u == nil || !u.membersOK {
		return nil, "", nil, false, false
	}
	var keyBuf [64]listKey
	o, keys, rebuilt, missing, notify := s.orderLocked(u, keyBuf[:0])
	if missing != nil || notify {
		return nil, "", missing, notify, false
	}
	u.used.Store(true)
	o = sortOrder(u, o, keys, rebuilt)
	if !hasCur {
		if p := u.page.Load(); p != nil && p.order == o && p.limit == limit && p.readVer == u.readVer && p.fresh() {
			return p.entries, p.next, nil, false, true
		}
	}
	entries, next = pageOf(u, o, cur, hasCur, limit)
	return entries, next, nil, false, true
}

// orderLocked returns the user's order of rooms, rebuilt (rebuilt true)
// when a join or leave made it stale or a room of it was evicted, with one
// sort key per room appended to keys; or the rooms whose info or last
// message the cache lacks, and notify true when the mention state of a
// membership is not known. s.mu is held, for reading at least.
func (s *Store) orderLocked(u *userState, keys []listKey) (o *roomOrder, _ []listKey, rebuilt bool, missing []string, notify bool) {
	o = u.order.Load()
	for {
		if o == nil || o.gen != u.gen {
			if o, missing = s.buildOrderLocked(u); missing != nil {
				return nil, nil, false, missing, false
			}
			rebuilt = true
		}
		keys = keys[:0]
		gone := false
		for i, ref := range o.refs {
			st := ref.st
			if st.gone {
				gone = true
				break
			}
			if !st.hasRoom || (st.room.LastSeq > 0 && !st.win.covers(st.room.LastSeq, st.room.LastSeq)) {
				missing = append(missing, ref.id)
			}
			notify = notify || !known(st, ref.m)
			keys = append(keys, listKey{at: st.room.LastActivityAt.UnixNano(), i: i})
		}
		if !gone {
			return o, keys, rebuilt, missing, notify
		}
		o = nil // an evicted room: rebuild
		notify = false
	}
}

// sortOrder returns o in list order, newest activity first, storing it as
// the user's order when it changed: from scratch after a rebuild, else by
// insertion, which costs one comparison per room while the order holds.
func sortOrder(u *userState, o *roomOrder, keys []listKey, rebuilt bool) *roomOrder {
	changed := rebuilt
	if rebuilt {
		slices.SortFunc(keys, func(a, b listKey) int {
			if o.newer(a, b) {
				return -1
			}
			return 1
		})
	} else {
		for i := 1; i < len(keys); i++ {
			for j := i; j > 0 && o.newer(keys[j], keys[j-1]); j-- {
				keys[j], keys[j-1] = keys[j-1], keys[j]
				changed = true
			}
		}
	}
	if !changed {
		return o
	}
	sorted := &roomOrder{gen: o.gen, refs: make([]listRef, len(keys))}
	for i, k := range keys {
		sorted.refs[i] = o.refs[k.i]
	}
	u.order.Store(sorted)
	return sorted
}

// pageOf returns the page of o (in list order) after cur, or the first page
// when hasCur is false, which it keeps as the user's first page.
func pageOf(u *userState, o *roomOrder, cur parley.RoomCursor, hasCur bool, limit int) (entries []parley.RoomEntry, next string) {
	// The rooms at or before the cursor are a prefix of the order.
	start := 0
	if hasCur {
		for start < len(o.refs) && cur.Before(o.refs[start].st.room) {
			start++
		}
	}
	refs := o.refs[start:]
	n := min(limit, len(refs))
	entries = make([]parley.RoomEntry, n)
	for i := range entries {
		ref := &refs[i]
		ref.st.used.Store(true)
		r := &ref.st.room
		e := &entries[i]
		e.Room, e.Unread = *r, parley.Unread(*r, ref.m.readSeq)
		e.Mentions, e.Notifications = ref.m.mentions, ref.m.level
		if r.LastSeq > 0 {
			e.LastMessage = ref.st.win.at(r.LastSeq)
		}
	}
	if len(refs) > n {
		next = parley.CursorOf(entries[n-1].Room).String()
	}
	if !hasCur {
		p := &firstPage{order: o, limit: limit, readVer: u.readVer, vers: make([]uint64, n), entries: entries[:n:n], next: next}
		for i := range p.vers {
			p.vers[i] = refs[i].st.ver
		}
		u.page.Store(p)
	}
	return entries, next
}

// A firstPage is a user's first room list page as last built. It is handed
// to every caller that asks for the same page again while nothing in it has
// changed: the same order (the same rooms sorted the same way), the same
// read positions (readVer) and each room's info (its ver). Immutable.
type firstPage struct {
	order   *roomOrder
	limit   int
	readVer uint64
	vers    []uint64 // of order.refs[:len(entries)]
	entries []parley.RoomEntry
	next    string
}

// fresh reports whether no room of the page has changed since it was built.
// The caller holds the read lock.
func (p *firstPage) fresh() bool {
	for i, v := range p.vers {
		if p.order.refs[i].st.ver != v {
			return false
		}
	}
	return true
}

// warmRooms loads what cachedRooms found missing: the user's memberships,
// or the info and last message of some of their rooms, and the mention
// states (notify, and after the memberships). It fails only when the inner
// store does.
func (s *Store) warmRooms(ctx context.Context, userID string, missing []string, notify bool) error {
	if missing == nil && !notify {
		if _, err := s.loadMemberships(ctx, userID); err != nil {
			return err
		}
		notify = true
	}
	for _, roomID := range missing {
		s.mu.RLock()
		st := s.rooms[roomID]
		hasRoom := st != nil && st.hasRoom
		winOK := st != nil && st.win.ok
		s.mu.RUnlock()
		if !hasRoom {
			if _, err := s.loadRoom(ctx, roomID); err != nil {
				return err
			}
		}
		if !winOK {
			s.loadNewest(ctx, roomID, 1)
		}
	}
	if notify {
		return s.loadNotify(ctx, userID)
	}
	return nil
}
