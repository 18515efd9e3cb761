package cache

import (
	"context"

	"parley"
)

// A window is the run of a room's most recent messages the cache holds:
// msgs[i] has seq lo+i, with no hole. An empty valid window (a new room)
// holds nothing from lo on. A message that would leave a hole (it is not the
// one right after the top) restarts the window at it, so a page is never
// served across a hole.
type window struct {
	ok   bool
	lo   int64
	msgs []parley.Message // ascending by seq, contiguous
}

// hi is the seq of the newest message held (lo-1 when empty).
func (w *window) hi() int64 { return w.lo + int64(len(w.msgs)) - 1 }

// covers reports whether the window holds every message from seq from to to.
func (w *window) covers(from, to int64) bool {
	return w.ok && from >= w.lo && to <= w.hi()
}

// at returns the message with that seq; the window must cover it.
func (w *window) at(seq int64) *parley.Message { return &w.msgs[seq-w.lo] }

// apply updates the window for a committed event, keeping at most max
// messages. It is idempotent: a message at or below the top is dropped.
func (w *window) apply(ev *parley.Event, max int) {
	switch {
	case ev.Kind == parley.EventRoom:
		*w = window{ok: true, lo: 1}
	case ev.Kind != parley.EventMessage || !w.ok:
	case ev.Message.Seq <= w.hi():
	case ev.Message.Seq == w.hi()+1:
		if len(w.msgs) == max {
			w.msgs[0] = parley.Message{} // let go of its strings
			w.msgs = w.msgs[1:]
			w.lo++
		}
		w.msgs = append(w.msgs, ev.Message)
	default:
		clear(w.msgs)
		w.msgs = append(w.msgs[:0], ev.Message)
		w.lo = ev.Message.Seq
	}
}

// newestWindow makes a window from a newest-first page that is the newest of
// its room. ok is false if the page is not contiguous.
func newestWindow(page []parley.Message) (window, bool) {
	if len(page) == 0 {
		return window{ok: true, lo: 1}, true
	}
	w := window{ok: true, lo: page[len(page)-1].Seq, msgs: make([]parley.Message, len(page))}
	for i := range page {
		w.msgs[len(page)-1-i] = page[i]
	}
	return w, contiguous(w.msgs)
}

func contiguous(asc []parley.Message) bool {
	for i := 1; i < len(asc); i++ {
		if asc[i].Seq != asc[i-1].Seq+1 {
			return false
		}
	}
	return true
}

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
// go to the inner store.
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

// cachedPage returns the page if the cache can serve it. It allocates the
// one slice it returns.
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
	out := make([]parley.Message, to-from+1)
	if p.Forward() {
		copy(out, st.win.msgs[from-st.win.lo:])
	} else {
		src := st.win.msgs[from-st.win.lo : to-st.win.lo+1]
		for i := range src {
			out[len(src)-1-i] = src[i]
		}
	}
	return out, true
}

// warmWindow loads what page p needs into the cache, if it lies within the
// recent window: the room's info, then its newest messages, then older
// messages down to the page. It returns only errors that the inner store
// would return for the page too (an unknown room).
func (s *Store) warmWindow(ctx context.Context, roomID string, p parley.Page) error {
	s.mu.RLock()
	st := s.rooms[roomID]
	hasRoom := st != nil && st.hasRoom
	s.mu.RUnlock()
	if !hasRoom {
		if _, err := s.loadRoom(ctx, roomID); err != nil {
			return err
		}
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
		winOK, lo := st.win.ok, st.win.lo
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
	if err == nil && !st.win.ok && s.rooms[roomID] == st {
		if w, ok := newestWindow(page); ok {
			for i := start; i < len(st.backlog); i++ {
				w.apply(&st.backlog[i], s.recent)
			}
			st.win = w
		}
	}
	ok := st.win.ok && s.rooms[roomID] == st
	s.endRoomLoadLocked(roomID, st)
	return ok
}

// loadOlder extends the window of a room downwards from its lowest seq lo to
// seq from. Committed messages never change, so no replay is needed: the
// loaded run is prepended if the window still starts at lo. It reports
// whether the window grew.
func (s *Store) loadOlder(ctx context.Context, roomID string, lo, from int64) bool {
	n := int(min(lo-from, parley.MaxPageLimit))
	if n < 1 {
		return false
	}
	page, err := s.inner.Messages(ctx, roomID, parley.Page{Before: lo, After: -1, Limit: n})
	if err != nil || len(page) == 0 || page[0].Seq != lo-1 {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.rooms[roomID]
	if st == nil || !st.win.ok || st.win.lo != lo {
		return false
	}
	have := len(st.win.msgs)
	keep := min(len(page), s.recent-have)
	if keep < 1 {
		return false
	}
	msgs := make([]parley.Message, keep+have)
	for i := 0; i < keep; i++ {
		msgs[keep-1-i] = page[i]
	}
	if !contiguous(msgs[:keep]) {
		return false
	}
	copy(msgs[keep:], st.win.msgs)
	st.win.msgs, st.win.lo = msgs, lo-int64(keep)
	return true
}
