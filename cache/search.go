package cache

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"unsafe"

	"parley"
)

// # Search from memory
//
// SearchRoom and Search are served from a per-room inverted index kept in
// memory (a roomIndex): every message of the room by seq, and for each word
// (parley.Words, the tokenizer ParseQuery uses) the seqs holding it, in
// ascending order. A room's index is built the first time a search needs
// it, by reading all its messages from the inner store page by page, as a
// load: the room's backlog keeps the events committed during the build,
// and the build replays them on its snapshot before installing it (a
// message at or below the index's top, a change no newer than the version
// held, change nothing twice; a message past the top + 1 means the build
// missed one, and it is thrown away). Once installed, Apply keeps it right:
// a send adds the message and its words, an edit removes the old text's
// words and adds the new one's, a deletion removes the words and keeps the
// tombstone (whose text is in no index).
//
// The indexes are bounded by Config.SearchBytes, over all rooms (an
// estimate of their heap: messages, strings, postings, map entries); past
// it the least recently searched rooms lose their index. Only a search
// builds an index, so sends to rooms nobody searches on this node pay
// nothing for it (BenchmarkApplySend: indexing a message costs several
// times the rest of Apply); a room created here is built from its few
// messages on its first search like any other. A search that
// cannot have every room it needs resident (a room larger than the
// budget, too many rooms for it, a build overtaken by more than the
// backlog holds) goes to the inner store's index, so answers are always
// complete.
//
// The answers are the inner store's: the rooms are the caller's
// memberships as the cache holds them (current: joins and leaves are
// applied), the order SearchNewer's (SearchRoom: seq descending), the
// cursor the same, the hits' Room the cached room info and the Message
// the version the index holds, which is the committed one.

// DefaultSearchBytes is the default of Config.SearchBytes: 256 MiB, a
// quarter of what a million messages of the search bench need (run it
// with --cache-search-mib 1024): the searched rooms' messages are a second
// copy of them in memory, and a node's memory is not only for search.
const DefaultSearchBytes = 256 << 20

// searchIndexes is the budget and the set of rooms with an index. Guarded
// by Store.mu, but clock (read under the read lock).
type searchIndexes struct {
	budget int64 // < 0: off
	used   int64
	rooms  map[*roomState]struct{}
	clock  atomic.Uint64 // ticks once a search; a room's index stores the tick of its last use
	builds atomic.Int64  // indexes built, for tests
}

// A roomIndex is a room's messages and inverted index. Guarded by Store.mu.
type roomIndex struct {
	msgs     []parley.Message // seq i+1 at i
	terms    map[string]int32 // word → its postings' index in lists
	lists    [][]uint32       // postings: seqs holding a word, ascending; nil if free
	free     []int32          // indexes of free lists
	monotone bool             // SentAt never decreases with seq: a search may stop early
	bytes    int64
	used     atomic.Uint64
	buf      []byte // parley.EachWord's, reused
}

const (
	msgSize  = int64(unsafe.Sizeof(parley.Message{}))
	termSize = 16 + 8 + 24 + 24 // map entry (key header, list index), its list header and its share of the buckets
	maxSeq   = 1<<32 - 1
)

func newRoomIndex() *roomIndex {
	return &roomIndex{terms: map[string]int32{}, monotone: true}
}

func msgBytes(m *parley.Message) int64 {
	n := int64(len(m.ID) + len(m.SenderID) + len(m.SenderName) + len(m.Body) + len(m.ClientID))
	if m.EditedAt != nil {
		n += 24
	}
	if m.DeletedAt != nil {
		n += 24
	}
	return n
}

// addWords files m under each of its words. A word the message repeats
// finds m's seq already in its postings. The map is only written for a new
// word: postings change in lists, so that a lookup by the word's bytes
// allocates nothing.
func (ix *roomIndex) addWords(m *parley.Message) {
	seq := uint32(m.Seq)
	ix.buf = parley.EachWord(m.Body, ix.buf, func(w []byte) {
		t, ok := ix.terms[string(w)]
		if !ok {
			t = ix.newList(string(w))
		}
		p := ix.lists[t]
		c := cap(p)
		if n := len(p); n > 0 && p[n-1] >= seq {
			i, found := slices.BinarySearch(p, seq)
			if found {
				return
			}
			p = slices.Insert(p, i, seq)
		} else {
			p = append(p, seq)
		}
		ix.bytes += 4 * int64(cap(p)-c)
		ix.lists[t] = p
	})
}

// newList files a new word under a free list and returns its index.
func (ix *roomIndex) newList(w string) int32 {
	var t int32
	if n := len(ix.free); n > 0 {
		t, ix.free = ix.free[n-1], ix.free[:n-1]
	} else {
		t = int32(len(ix.lists))
		ix.lists = append(ix.lists, nil)
	}
	ix.terms[w] = t
	ix.bytes += termSize + int64(len(w))
	return t
}

// removeWords takes m out of the postings of its words.
func (ix *roomIndex) removeWords(m *parley.Message) {
	seq := uint32(m.Seq)
	ix.buf = parley.EachWord(m.Body, ix.buf, func(w []byte) {
		t, ok := ix.terms[string(w)]
		if !ok {
			return
		}
		p := ix.lists[t]
		i, found := slices.BinarySearch(p, seq)
		if !found {
			return
		}
		if len(p) == 1 {
			delete(ix.terms, string(w))
			ix.bytes -= termSize + int64(len(w)) + 4*int64(cap(p))
			ix.lists[t] = nil
			ix.free = append(ix.free, t)
			return
		}
		ix.lists[t] = slices.Delete(p, i, i+1)
	})
}

// add appends the room's next message.
func (ix *roomIndex) add(m *parley.Message) {
	if n := len(ix.msgs); n > 0 && m.SentAt.Before(ix.msgs[n-1].SentAt) {
		ix.monotone = false
	}
	c := cap(ix.msgs)
	ix.msgs = append(ix.msgs, *m)
	ix.bytes += msgSize*int64(cap(ix.msgs)-c) + msgBytes(m)
	if !m.Deleted() {
		ix.addWords(m)
	}
}

// apply updates the index for a committed event of its room. It reports
// false when the index cannot follow (a message past its top + 1, a seq
// too large): the caller drops it.
func (ix *roomIndex) apply(ev *parley.Event) bool {
	m := &ev.Message
	switch {
	case ev.Kind == parley.EventRoom:
		*ix = roomIndex{terms: map[string]int32{}, monotone: true}
	case ev.Kind == parley.EventMessage:
		switch {
		case m.Seq <= int64(len(ix.msgs)):
		case m.Seq == int64(len(ix.msgs))+1 && m.Seq <= maxSeq:
			ix.add(m)
		default:
			return false
		}
	case isChange(ev):
		if m.Seq > int64(len(ix.msgs)) {
			return false
		}
		old := &ix.msgs[m.Seq-1]
		if old.Change >= m.Change {
			return true
		}
		ix.removeWords(old)
		ix.bytes += msgBytes(m) - msgBytes(old)
		*old = *m
		if !m.Deleted() {
			ix.addWords(old)
		}
	}
	return true
}

// match calls fn with the seqs holding every term, newest first, below
// before (0: no bound), until fn returns false.
func (ix *roomIndex) match(terms []string, before int64, fn func(seq uint32) bool) {
	var lists [parley.MaxQueryTerms][]uint32
	ps := lists[:0]
	for _, t := range terms {
		var p []uint32
		if i, ok := ix.terms[t]; ok {
			p = ix.lists[i]
		}
		if len(p) == 0 {
			return
		}
		ps = append(ps, p)
	}
	if len(ps) == 0 {
		return
	}
	slices.SortFunc(ps, func(a, b []uint32) int { return len(a) - len(b) })
	first := ps[0]
	top := len(first)
	if before > 0 && before <= maxSeq {
		top, _ = slices.BinarySearch(first, uint32(before))
	}
next:
	for i := top - 1; i >= 0; i-- {
		seq := first[i]
		for _, p := range ps[1:] {
			if _, ok := slices.BinarySearch(p, seq); !ok {
				continue next
			}
		}
		if !fn(seq) {
			return
		}
	}
}

// errTooBig stops a build whose room does not fit the budget.
var errTooBig = errors.New("cache: room too big for the search budget")

// buildIndex builds the index of a room and installs it unless the room
// has one by now. It reports whether the room has one afterwards; errors
// are left for the caller's fallback to the inner store to report.
func (s *Store) buildIndex(ctx context.Context, roomID string) bool {
	s.mu.Lock()
	if st := s.rooms[roomID]; st != nil && st.idxBuild != nil {
		// Another search builds it: wait for that one rather than read
		// the room twice.
		done := st.idxBuild
		s.mu.Unlock()
		select {
		case <-done:
		case <-ctx.Done():
			return false
		}
		s.mu.RLock()
		defer s.mu.RUnlock()
		return st.idx != nil && s.rooms[roomID] == st
	}
	st := s.roomLocked(roomID)
	start := st.backlog.begin()
	done := make(chan struct{})
	st.idxBuild = done
	s.mu.Unlock()

	ix, err := s.readIndex(ctx, roomID)
	s.mu.Lock()
	defer s.mu.Unlock()
	st.idxBuild = nil
	close(done)
	if events, ok := st.backlog.since(start); ok && err == nil && st.idx == nil && s.rooms[roomID] == st {
		good := true
		for i := range events {
			if good = ix.apply(&events[i]); !good {
				break
			}
		}
		if good {
			ix.used.Store(s.search.clock.Load())
			st.idx, st.idxOwner = ix, &s.search
			s.search.rooms[st] = struct{}{}
			s.search.used += ix.bytes
			s.search.builds.Add(1)
			s.trimSearchLocked()
		}
	}
	ok := st.idx != nil && s.rooms[roomID] == st
	s.endRoomLoadLocked(roomID, st)
	return ok
}

// readIndex reads all of a room's messages from the inner store, oldest
// first, into a new index.
func (s *Store) readIndex(ctx context.Context, roomID string) (*roomIndex, error) {
	ix := newRoomIndex()
	for {
		page, err := s.inner.Messages(ctx, roomID, parley.Page{After: int64(len(ix.msgs)), Limit: parley.MaxPageLimit})
		if err != nil {
			return nil, err
		}
		for i := range page {
			m := &page[i]
			if m.Seq != int64(len(ix.msgs))+1 || m.Seq > maxSeq {
				return nil, errors.New("cache: history with a hole")
			}
			m.RoomID = roomID // one string for the room's messages
			ix.add(m)
		}
		if ix.bytes > s.search.budget {
			return nil, errTooBig
		}
		if len(page) < parley.MaxPageLimit {
			return ix, nil
		}
	}
}

// applySearchLocked updates the room's index, if it has one, for ev.
func (s *Store) applySearchLocked(st *roomState, ev *parley.Event) {
	ix := st.idx
	if ix == nil {
		return
	}
	before := ix.bytes
	if !ix.apply(ev) {
		s.dropIndexLocked(st)
		return
	}
	s.search.used += ix.bytes - before
	if s.search.used > s.search.budget {
		s.trimSearchLocked()
	}
}

// dropIndexLocked forgets a room's index.
func (s *Store) dropIndexLocked(st *roomState) { s.search.forget(st) }

// forget drops a room's index, if it has one. Store.mu is held.
func (x *searchIndexes) forget(st *roomState) {
	if x == nil || st.idx == nil {
		return
	}
	x.used -= st.idx.bytes
	st.idx = nil
	delete(x.rooms, st)
}

// trimSearchLocked drops the least recently searched indexes until the
// indexes use at most nine tenths of the budget, so that the sends that
// follow do not sweep again at once.
func (s *Store) trimSearchLocked() {
	if s.search.used <= s.search.budget {
		return
	}
	target := s.search.budget / 10 * 9
	for s.search.used > target {
		var victim *roomState
		for st := range s.search.rooms {
			if victim == nil || st.idx.used.Load() < victim.idx.used.Load() {
				victim = st
			}
		}
		if victim == nil {
			return
		}
		s.dropIndexLocked(victim)
	}
}

// SearchRoom returns the room's messages holding every word of q, from
// the room's index in memory (built on the first search of the room); a
// room the index cannot hold is searched by the inner store.
func (s *Store) SearchRoom(ctx context.Context, roomID string, q parley.Query, before int64, limit int) ([]parley.Message, error) {
	if s.search.budget >= 0 && len(q.Terms) > 0 {
		limit = parley.ClampPageLimit(limit)
		for attempt := range 2 {
			if msgs, ok := s.cachedSearchRoom(roomID, q, before, limit); ok {
				if attempt == 0 {
					s.metrics.hit(kindSearch)
				}
				return msgs, nil
			}
			if attempt == 0 {
				s.metrics.miss(kindSearch)
			}
			if !s.buildIndex(ctx, roomID) {
				break
			}
		}
	}
	return s.inner.SearchRoom(ctx, roomID, q, before, limit)
}

func (s *Store) cachedSearchRoom(roomID string, q parley.Query, before int64, limit int) ([]parley.Message, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	st := s.rooms[roomID]
	if st == nil || st.idx == nil {
		return nil, false
	}
	st.used.Store(true)
	st.idx.used.Store(s.search.clock.Add(1))
	msgs := []parley.Message{}
	st.idx.match(q.Terms, before, func(seq uint32) bool {
		msgs = append(msgs, st.idx.msgs[seq-1])
		return len(msgs) < limit
	})
	return msgs, true
}

// Search returns the messages holding every word of q in the user's rooms,
// from the rooms' indexes in memory once the user's memberships and every
// room of theirs are resident; otherwise from the inner store.
func (s *Store) Search(ctx context.Context, userID string, q parley.Query, cursor string, limit int) ([]parley.SearchHit, string, error) {
	c, hasCur, err := parley.ParseSearchCursor(cursor)
	if err != nil || s.search.budget < 0 || len(q.Terms) == 0 {
		return s.inner.Search(ctx, userID, q, cursor, limit)
	}
	limit = parley.ClampPageLimit(limit)
	for attempt := range 3 {
		hits, next, missing, ok := s.cachedSearch(userID, q, c, hasCur, limit)
		if ok {
			if attempt == 0 {
				s.metrics.hit(kindSearch)
			}
			return hits, next, nil
		}
		if attempt == 0 {
			s.metrics.miss(kindSearch)
		}
		if !s.warmSearch(ctx, userID, missing) {
			break
		}
	}
	return s.inner.Search(ctx, userID, q, cursor, limit)
}

// warmSearch loads what cachedSearch found missing: the user's
// memberships, or the info and index of some of their rooms. It reports
// false when a load failed or an index does not fit.
func (s *Store) warmSearch(ctx context.Context, userID string, missing []string) bool {
	if missing == nil {
		_, err := s.loadMemberships(ctx, userID)
		return err == nil
	}
	for _, roomID := range missing {
		s.mu.RLock()
		st := s.rooms[roomID]
		hasRoom := st != nil && st.hasRoom
		s.mu.RUnlock()
		if !hasRoom {
			if _, err := s.loadRoom(ctx, roomID); err != nil {
				return false
			}
		}
		if !s.buildIndex(ctx, roomID) {
			return false
		}
	}
	return true
}

// A candidate is a match of Search while the page is chosen.
type candidate struct {
	st *roomState
	m  *parley.Message
}

// cachedSearch answers Search from the indexes, or returns the rooms
// whose info or index is missing (nil if the memberships are).
func (s *Store) cachedSearch(userID string, q parley.Query, c parley.SearchCursor, hasCur bool, limit int) (hits []parley.SearchHit, next string, missing []string, ok bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	u := s.users[userID]
	if u == nil || !u.membersOK {
		return nil, "", nil, false
	}
	for id := range u.members {
		if st := s.rooms[id]; st == nil || st.idx == nil || !st.hasRoom {
			missing = append(missing, id)
		}
	}
	if missing != nil {
		return nil, "", missing, false
	}
	u.used.Store(true)
	tick := s.search.clock.Add(1)
	// best holds the newest limit+1 matches after the cursor, newest first.
	best := make([]candidate, 0, limit+1)
	newer := func(a *parley.Message, b *parley.Message) bool { return parley.SearchNewer(*a, *b) }
	for id := range u.members {
		st := s.rooms[id]
		ix := st.idx
		st.used.Store(true)
		ix.used.Store(tick)
		ix.match(q.Terms, 0, func(seq uint32) bool {
			m := &ix.msgs[seq-1]
			if hasCur && !c.Older(*m) {
				return true // on an earlier page
			}
			if len(best) == limit+1 && !newer(m, best[limit].m) {
				return !ix.monotone // the room's later matches are older still
			}
			i, _ := slices.BinarySearchFunc(best, m, func(e candidate, t *parley.Message) int {
				if newer(e.m, t) {
					return -1
				}
				return 1
			})
			if len(best) == limit+1 {
				best = best[:limit]
			}
			best = slices.Insert(best, i, candidate{st: st, m: m})
			return true
		})
	}
	if len(best) > limit {
		best = best[:limit]
		next = parley.CursorAfter(*best[limit-1].m).String()
	}
	hits = make([]parley.SearchHit, len(best))
	for i, b := range best {
		hits[i] = parley.SearchHit{Room: b.st.room, Message: *b.m}
	}
	return hits, next, nil, true
}
