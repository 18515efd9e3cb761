package cache

import (
	"context"
	"slices"
	"strings"

	"parley"
)

// Rooms returns the user's room list, from memory once the user's
// memberships, their rooms and each room's last message are cached; a miss
// loads what is missing and then serves from memory. Lists the cache cannot
// serve (a bad limit or cursor, parts that stay missing) come from the inner
// store.
func (s *Store) Rooms(ctx context.Context, userID string, cursor string, limit int) ([]parley.RoomEntry, string, error) {
	cur, hasCur, err := parley.ParseRoomCursor(cursor)
	if err != nil || limit < 1 || limit > parley.MaxPageLimit {
		s.metrics.miss(kindRooms)
		return s.inner.Rooms(ctx, userID, cursor, limit)
	}
	for attempt := range 3 {
		entries, next, missing, ok := s.cachedRooms(userID, cur, hasCur, limit)
		if ok {
			if attempt == 0 {
				s.metrics.hit(kindRooms)
			}
			return entries, next, nil
		}
		if attempt == 0 {
			s.metrics.miss(kindRooms)
		}
		if err := s.warmRooms(ctx, userID, missing); err != nil {
			break
		}
	}
	return s.inner.Rooms(ctx, userID, cursor, limit)
}

// A listKey is one room of a room list while it is sorted.
type listKey struct {
	at      int64 // last activity, Unix ns
	id      string
	st      *roomState
	readSeq int64
}

// listNewer orders list keys as parley.RoomNewer orders rooms.
func listNewer(a, b listKey) int {
	if a.at != b.at {
		if a.at > b.at {
			return -1
		}
		return 1
	}
	return -strings.Compare(a.id, b.id)
}

// cachedRooms builds the room list from the cache. If something is missing it
// returns ok false and the rooms whose info or last message is missing (nil
// when the memberships themselves are missing). It allocates the entries and
// one array for their last messages.
func (s *Store) cachedRooms(userID string, cur parley.RoomCursor, hasCur bool, limit int) (entries []parley.RoomEntry, next string, missing []string, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u := s.users[userID]
	if u == nil || !u.membersOK {
		return nil, "", nil, false
	}
	var buf [64]listKey
	keys := buf[:0]
	for roomID, m := range u.members {
		st := s.rooms[roomID]
		if st == nil || !st.hasRoom || (st.room.LastSeq > 0 && !st.win.covers(st.room.LastSeq, st.room.LastSeq)) {
			missing = append(missing, roomID)
			continue
		}
		if hasCur && cur.Before(st.room) {
			continue
		}
		keys = append(keys, listKey{at: st.room.LastActivityAt.UnixNano(), id: roomID, st: st, readSeq: m.readSeq})
	}
	if len(missing) > 0 {
		return nil, "", missing, false
	}
	u.used.Store(true)
	slices.SortFunc(keys, listNewer)

	n := min(limit, len(keys))
	entries = make([]parley.RoomEntry, n)
	var withMsg int
	for _, k := range keys[:n] {
		if k.st.room.LastSeq > 0 {
			withMsg++
		}
	}
	msgs := make([]parley.Message, withMsg)
	j := 0
	for i, k := range keys[:n] {
		k.st.used.Store(true)
		r := &k.st.room
		entries[i] = parley.RoomEntry{Room: *r, Unread: parley.Unread(*r, k.readSeq)}
		if r.LastSeq > 0 {
			msgs[j] = *k.st.win.at(r.LastSeq)
			entries[i].LastMessage = &msgs[j]
			j++
		}
	}
	if len(keys) > n {
		next = parley.CursorOf(entries[n-1].Room).String()
	}
	return entries, next, nil, true
}

// warmRooms loads what cachedRooms found missing: the user's memberships,
// or the info and last message of some of their rooms. It fails only when
// the inner store does.
func (s *Store) warmRooms(ctx context.Context, userID string, missing []string) error {
	if missing == nil {
		_, err := s.loadMemberships(ctx, userID)
		return err
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
	return nil
}
