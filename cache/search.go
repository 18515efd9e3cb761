package cache

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"time"

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
// a send records the message, and the room's next search files its words
// before it matches (flush: a batch of the room's messages at once, which
// is cheaper than a message at a time and keeps that work off the commit
// path, though the flush holds Store.mu's read lock, which a commit
// waits for: ~1 µs a message recorded since the room's last search); an
// edit removes the old text's words and adds the new one's, a
// deletion removes the words and keeps the tombstone (whose text is in no
// index). The layout (a dictionary of words shared by the rooms, postings
// and messages without pointers) is search_layout.go's.
//
// The indexes are bounded by Config.SearchBytes, over all rooms (an
// estimate of their heap: records, strings, postings, map entries, the
// dictionary; BenchmarkSearchMemory compares it with the heap measured;
// the postings a search files count from the room's next commit or the
// next trim); past it the least recently searched rooms lose their index.
// Only a search builds an index, so sends to rooms nobody searches on this
// node pay nothing for it (BenchmarkApplySend, BenchmarkSearchMemory:
// recording a message in an index costs about the rest of Apply, filing
// its words on the next search about as much again); a room created here is built from its few
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

// DefaultSearchBytes is the default of Config.SearchBytes: 256 MiB, about
// two thirds of what a million messages of the search bench need (~360
// bytes a message by BenchmarkSearchMemory: run it with
// --cache-search-mib 512): the searched rooms' messages are a second copy
// of them in memory, and a node's memory is not only for search.
const DefaultSearchBytes = 256 << 20

// searchIndexes is the budget and the set of rooms with an index. Guarded
// by Store.mu, but clock (read under the read lock).
type searchIndexes struct {
	budget int64 // < 0: off
	used   int64
	rooms  map[*roomState]struct{}
	clock  atomic.Uint64 // ticks once a search; a room's index stores the tick of its last use
	builds atomic.Int64  // indexes built, for tests
	dict   dictionary    // the words of every room's index
}

// total is the estimate of the indexes' heap: the rooms' and the
// dictionary's.
func (x *searchIndexes) total() int64 { return x.used + x.dict.bytes.Load() }

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
			ix.counted = ix.bytes + ix.pbytes
			s.search.used += ix.counted
			s.search.rooms[st] = struct{}{}
			s.search.builds.Add(1)
			ix = nil // installed
			s.trimSearchLocked()
		}
	}
	if ix != nil {
		ix.release() // not installed
	}
	ok := st.idx != nil && s.rooms[roomID] == st
	s.endRoomLoadLocked(roomID, st)
	return ok
}

// readIndex reads all of a room's messages from the inner store, oldest
// first, into a new index.
func (s *Store) readIndex(ctx context.Context, roomID string) (*roomIndex, error) {
	ix := newRoomIndex(&s.search.dict, roomID)
	for {
		page, err := s.inner.Messages(ctx, roomID, parley.Page{After: int64(len(ix.recs)), Limit: parley.MaxPageLimit})
		if err != nil {
			ix.release()
			return nil, err
		}
		for i := range page {
			m := page[i] // a copy: the store's results are read-only (parley.Store)
			if m.Seq != int64(len(ix.recs))+1 || m.Seq > maxSeq {
				ix.release()
				return nil, errors.New("cache: history with a hole")
			}
			m.RoomID = roomID // one string for the room's messages
			ix.add(&m)
		}
		ix.flush()
		if ix.bytes+ix.pbytes > s.search.budget {
			ix.release()
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
	if !ix.apply(ev) {
		s.dropIndexLocked(st)
		return
	}
	s.search.count(ix)
	if s.search.total() > s.search.budget {
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
	x.used -= st.idx.counted
	st.idx.release()
	st.idx = nil
	delete(x.rooms, st)
}

// count brings used up to date with ix's estimate (a flush changes it
// under the read lock only). Store.mu is held.
func (x *searchIndexes) count(ix *roomIndex) {
	n := ix.bytes + ix.pbytes
	x.used += n - ix.counted
	ix.counted = n
}

// reset drops every room's index. Store.mu is held.
func (x *searchIndexes) reset() {
	for st := range x.rooms {
		x.forget(st)
	}
}

// trimSearchLocked drops the least recently searched indexes until the
// indexes use at most nine tenths of the budget, so that the sends that
// follow do not sweep again at once.
func (s *Store) trimSearchLocked() {
	if s.search.total() <= s.search.budget {
		return
	}
	for st := range s.search.rooms {
		s.search.count(st.idx)
	}
	target := s.search.budget / 10 * 9
	for s.search.total() > target {
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
	st.idx.flush()
	msgs := []parley.Message{}
	ids, n, ok := s.search.termIDs(q.Terms)
	if !ok {
		return msgs, true
	}
	st.idx.match(ids[:n], before, func(seq uint32) bool {
		msgs = append(msgs, st.idx.message(seq))
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
		if s.ensureRoom(ctx, roomID) != nil {
			return false
		}
		if !s.buildIndex(ctx, roomID) {
			return false
		}
	}
	return true
}

// A candidate is a match of Search while the page is chosen: its room,
// and the fields of its message that order it.
type candidate struct {
	st   *roomState
	at   time.Time // SentAt
	room string    // RoomID
	seq  int64
}

// newer is parley.SearchNewer for candidates.
func (a *candidate) newer(b *candidate) bool {
	switch {
	case !b.at.Equal(a.at):
		return b.at.Before(a.at)
	case b.room != a.room:
		return b.room < a.room
	}
	return b.seq < a.seq
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
	for id := range u.members {
		s.rooms[id].idx.flush()
	}
	ids, n, found := s.search.termIDs(q.Terms)
	for id := range u.members {
		st := s.rooms[id]
		ix := st.idx
		st.used.Store(true)
		ix.used.Store(tick)
		if !found {
			continue
		}
		ix.match(ids[:n], 0, func(seq uint32) bool {
			m := ix.orderKey(seq)
			if hasCur && !c.Older(m) {
				return true // on an earlier page
			}
			k := candidate{st: st, at: m.SentAt, room: m.RoomID, seq: m.Seq}
			if len(best) == limit+1 && !k.newer(&best[limit]) {
				return !ix.monotone // the room's later matches are older still
			}
			i, _ := slices.BinarySearchFunc(best, &k, func(e candidate, t *candidate) int {
				if e.newer(t) {
					return -1
				}
				return 1
			})
			if len(best) == limit+1 {
				best = best[:limit]
			}
			best = slices.Insert(best, i, k)
			return true
		})
	}
	if len(best) > limit {
		best = best[:limit]
		b := &best[limit-1]
		next = parley.SearchCursor{At: b.at, RoomID: b.room, Seq: b.seq}.String()
	}
	hits = make([]parley.SearchHit, len(best))
	for i, b := range best {
		hits[i] = parley.SearchHit{Room: b.st.room, Message: b.st.idx.message(uint32(b.seq))}
	}
	return hits, next, nil, true
}

// WaitIndexed waits for the inner store's search index, when it trails
// the commit (parley.IndexWaiter).
func (s *Store) WaitIndexed(ctx context.Context) error { return parley.WaitIndexed(ctx, s.inner) }
