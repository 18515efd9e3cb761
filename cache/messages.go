package cache

import (
	"context"

	"parley"
)

// span returns the seqs page p selects in a room whose newest seq is last:
// from from to to, empty when from > to. ok is false for a page the cache
// leaves to the inner store to judge (out of range).
func span(p parley.Page, last int64) (from, to int64, ok bool) {
	if p.Limit < 1 || p.Limit > parley.MaxPageLimit {
		return 0, 0, false
	}
	limit := int64(p.Limit)
	if p.Forward() {
		if p.After >= last {
			return 1, 0, true
		}
		return p.After + 1, min(p.After+limit, last), true
	}
	if p.Before < 0 {
		return 0, 0, false
	}
	top := last
	if p.Before > 0 {
		top = min(p.Before-1, last)
	}
	return max(1, top-limit+1), top, true
}

// Messages returns a page of a room's history. Pages within the newest
// Config.RecentMessages messages are served from memory; the first such read
// of a room loads them. Older pages, and pages the window cannot cover yet,
// go to the inner store. A newest-first page served from memory is shared
// with every caller: callers must not modify its messages.
func (s *Store) Messages(ctx context.Context, roomID string, p parley.Page) ([]parley.Message, error) {
	if page, ok := s.cachedPage(roomID, p); ok {
		s.metrics.hit(kindMessages)
		return page, nil
	}
	s.metrics.miss(kindMessages)
	if err := s.warmWindow(ctx, roomID, p); err != nil {
		return nil, err
	}
	if page, ok := s.cachedPage(roomID, p); ok {
		return page, nil
	}
	return s.inner.Messages(ctx, roomID, p)
}

// cachedPage returns the page if the cache can serve it: a newest-first
// page without copying, an oldest-first one in the one slice it allocates.
func (s *Store) cachedPage(roomID string, p parley.Page) ([]parley.Message, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.rooms[roomID]
	if st == nil || !st.hasRoom {
		return nil, false
	}
	from, to, ok := span(p, st.room.LastSeq)
	if !ok {
		return nil, false
	}
	if from > to {
		st.used.Store(true)
		return []parley.Message{}, true
	}
	if !st.win.covers(from, to) {
		return nil, false
	}
	st.used.Store(true)
	if p.Forward() {
		return st.win.oldestFirst(from, to), true
	}
	return st.win.newestFirst(from, to), true
}

// warmWindow loads what page p needs into the cache, if it lies within the
// recent window: the room's info, then its newest messages, then older
// messages down to the page. It returns only errors that the inner store
// would return for the page too (an unknown room).
func (s *Store) warmWindow(ctx context.Context, roomID string, p parley.Page) error {
	if err := s.ensureRoom(ctx, roomID); err != nil {
		return err
	}
	for range 4 { // bounded: each round loads up to MaxPageLimit messages
		s.mu.RLock()
		st := s.rooms[roomID]
		if st == nil || !st.hasRoom {
			s.mu.RUnlock()
			return nil
		}
		last := st.room.LastSeq
		from, to, ok := span(p, last)
		winOK, lo := st.win.ok, st.win.lo()
		s.mu.RUnlock()
		if !ok || from > to || from <= last-int64(s.recent) {
			return nil // out of range or older than the window
		}
		switch {
		case !winOK:
			if !s.loadNewest(ctx, roomID, min(s.recent, parley.MaxPageLimit)) {
				return nil
			}
		case from < lo:
			if !s.loadOlder(ctx, roomID, lo, max(from, last-int64(s.recent)+1)) {
				return nil
			}
		default:
			return nil // covered, or the room's info is newer than the window for now
		}
	}
	return nil
}

// loadNewest loads the room's newest n messages as its window, replaying the
// message events committed meanwhile, unless the room has a window by now.
// It reports whether the room has a window afterwards. Errors are left for
// the caller's fallback to the inner store to report.
func (s *Store) loadNewest(ctx context.Context, roomID string, n int) bool {
	st, start := s.beginRoomLoad(roomID)
	page, err := s.inner.Messages(ctx, roomID, parley.Newest(n))
	s.mu.Lock()
	defer s.mu.Unlock()
	if events, ok := st.backlog.since(start); ok && err == nil && !st.win.ok && s.rooms[roomID] == st {
		if w, ok := newestWindow(page); ok {
			for i := range events {
				w.apply(&events[i], s.recent)
			}
			st.win = w
		}
	}
	ok := st.win.ok && s.rooms[roomID] == st
	s.endRoomLoadLocked(roomID, st)
	return ok
}

// loadOlder extends the window of a room downwards from its lowest seq lo to
// seq from. The loaded run is added if the window still starts at lo, with
// the edits and deletions committed meanwhile replayed on it (edits.go).
// It reports whether the window grew.
func (s *Store) loadOlder(ctx context.Context, roomID string, lo, from int64) bool {
	n := int(min(lo-from, parley.MaxPageLimit))
	if n < 1 {
		return false
	}
	st, start := s.beginRoomLoad(roomID)
	page, err := s.inner.Messages(ctx, roomID, parley.Page{Before: lo, After: -1, Limit: n})
	s.mu.Lock()
	defer s.mu.Unlock()
	defer s.endRoomLoadLocked(roomID, st)
	events, ok := st.backlog.since(start)
	if err != nil || len(page) == 0 || !ok || s.rooms[roomID] != st || !st.win.ok || st.win.lo() != lo {
		return false
	}
	return st.win.extend(replayChanges(page, events), s.recent)
}

// ensureRoom loads the room's info into the cache unless it is there.
func (s *Store) ensureRoom(ctx context.Context, roomID string) error {
	s.mu.RLock()
	st := s.rooms[roomID]
	hasRoom := st != nil && st.hasRoom
	s.mu.RUnlock()
	if hasRoom {
		return nil
	}
	_, err := s.loadRoom(ctx, roomID)
	return err
}
