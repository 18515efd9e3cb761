package cache

import (
	"slices"
	"sync"
	"sync/atomic"

	"parley"
)

// A roomIndex is a room's messages and inverted index, laid out as
// search_layout.go says. Guarded by Store.mu; its words' references in
// dict by dict.mu too.
type roomIndex struct {
	dict     *dictionary
	room     string                    // RoomID of its messages
	recs     []msgRec                  // seq i+1 at i
	arena    []byte                    // the records' strings; append-only
	dead     int64                     // arena bytes no record refers to
	odd      map[uint32]parley.Message // messages a record cannot hold, by seq
	terms    map[uint32]postSpan       // word id → its postings in pool
	pool     []uint32                  // postings of every word
	poolDead int64                     // pool slots no span holds
	monotone bool                      // SentAt never decreases with seq: a search may stop early
	bytes    int64                     // estimate of recs, arena and odd
	used     atomic.Uint64

	// Postings are filed lazily: Apply only records a sent message, and
	// the room's next search files the words of the messages past indexed
	// (flush). A flush runs under Store.mu's read lock, so the fields
	// below it writes (terms, pool, poolDead, pbytes, buf, indexed) are
	// guarded by mu too when Store.mu is only read-locked.
	mu      sync.Mutex
	indexed atomic.Uint32 // seqs up to it have their words filed
	pbytes  int64         // estimate of terms and pool
	counted int64         // bytes + pbytes when last added to searchIndexes.used
	buf     []byte        // parley.EachWord's, reused
}

const maxSeq = 1<<32 - 1

func newRoomIndex(d *dictionary, roomID string) *roomIndex {
	return &roomIndex{dict: d, room: roomID, terms: map[uint32]postSpan{}, monotone: true}
}

// msgBytes is the heap of m's strings and optional times, for odd.
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

// addWords files seq under each word of body. A word the message repeats
// finds seq already in its postings; a word new to the room takes a
// reference in the dictionary.
func (ix *roomIndex) addWords(seq uint32, body string) {
	d := ix.dict
	d.mu.Lock()
	ix.buf = parley.EachWord(body, ix.buf, func(w []byte) {
		id := d.intern(w)
		if ix.addPosting(id, seq) {
			d.words[id].refs++
			ix.pbytes += spanSize
		}
	})
	d.mu.Unlock()
}

// removeWords takes seq out of the postings of each word of body; a word
// the room no longer holds drops its reference.
func (ix *roomIndex) removeWords(seq uint32, body string) {
	d := ix.dict
	d.mu.Lock()
	ix.buf = parley.EachWord(body, ix.buf, func(w []byte) {
		id, ok := d.ids[string(w)]
		if ok && ix.removePosting(id, seq) {
			d.unref(id)
		}
	})
	d.mu.Unlock()
	ix.compactPool()
}

// release drops the index's references to its words and empties it. Every
// index made is released or installed, and every installed one released
// when dropped, so that the dictionary holds only the words of live
// indexes.
func (ix *roomIndex) release() {
	d := ix.dict
	d.mu.Lock()
	for id := range ix.terms {
		d.unref(id)
	}
	d.mu.Unlock()
	ix.recs, ix.arena, ix.dead, ix.odd = nil, nil, 0, nil
	ix.terms, ix.pool, ix.poolDead = map[uint32]postSpan{}, nil, 0
	ix.monotone, ix.bytes, ix.pbytes = true, 0, 0
	ix.indexed.Store(0)
}

// flush files the words of the messages past indexed. Store.mu is held,
// for reading at least.
func (ix *roomIndex) flush() {
	if int(ix.indexed.Load()) == len(ix.recs) {
		return
	}
	ix.mu.Lock()
	defer ix.mu.Unlock()
	n := uint32(len(ix.recs))
	seq := ix.indexed.Load() + 1
	if seq > n {
		return
	}
	d := ix.dict
	d.mu.Lock()
	for ; seq <= n; seq++ {
		if ix.deletedAt(seq) {
			continue
		}
		ix.buf = parley.EachWord(ix.bodyOf(seq), ix.buf, func(w []byte) {
			id := d.intern(w)
			if ix.addPosting(id, seq) {
				d.words[id].refs++
				ix.pbytes += spanSize
			}
		})
	}
	d.mu.Unlock()
	ix.compactPool()
	ix.indexed.Store(n)
}

// add appends the room's next message; its words are filed by the next
// flush.
func (ix *roomIndex) add(m *parley.Message) {
	if n := len(ix.recs); n > 0 && ix.monotone && m.SentAt.Before(ix.sentTime(uint32(n))) {
		ix.monotone = false
	}
	c := cap(ix.recs)
	ix.recs = append(ix.recs, msgRec{})
	ix.bytes += recSize * int64(cap(ix.recs)-c)
	ix.recs[len(ix.recs)-1] = ix.pack(m, nil)
}

// apply updates the index for a committed event of its room. It reports
// false when the index cannot follow (a message past its top + 1, a seq
// too large): the caller drops it.
func (ix *roomIndex) apply(ev *parley.Event) bool {
	m := &ev.Message
	switch {
	case ev.Kind == parley.EventRoom:
		ix.release()
	case ev.Kind == parley.EventMessage:
		switch {
		case m.Seq <= int64(len(ix.recs)):
		case m.Seq == int64(len(ix.recs))+1 && m.Seq <= maxSeq:
			ix.add(m)
		default:
			return false
		}
	case isChange(ev):
		if m.Seq > int64(len(ix.recs)) {
			return false
		}
		seq := uint32(m.Seq)
		if ix.changeOf(seq) >= m.Change {
			return true
		}
		filed := seq <= ix.indexed.Load()
		if filed {
			ix.removeWords(seq, ix.bodyOf(seq))
		}
		old := &ix.recs[seq-1]
		keep := *old
		if keep.flags&recOdd != 0 {
			o := ix.odd[seq]
			delete(ix.odd, seq)
			ix.bytes -= oddSize + msgBytes(&o)
		}
		*old = ix.pack(m, &keep)
		if keep.flags&recOdd == 0 {
			ix.dead += int64(keep.bodyLen)
			if old.flags&recOdd != 0 || old.off != keep.off {
				ix.dead += int64(keep.idLen) + int64(keep.senderLen) + int64(keep.nameLen) + int64(keep.cliLen)
			}
		}
		ix.compactArena()
		if filed && !m.Deleted() {
			ix.addWords(seq, m.Body)
		}
	}
	return true
}

// termIDs returns the dictionary's ids of terms, or ok false if one is in
// no index. Store.mu is held (read at least) and the rooms to be matched
// are flushed: their words, and so those words' ids, cannot change until
// it is released (a word's id is freed only once no index refers to it).
func (x *searchIndexes) termIDs(terms []string) (ids [parley.MaxQueryTerms]uint32, n int, ok bool) {
	d := &x.dict
	d.mu.RLock()
	defer d.mu.RUnlock()
	for _, t := range terms {
		id, ok := d.ids[t]
		if !ok || n == len(ids) {
			return ids, 0, false
		}
		ids[n] = id
		n++
	}
	return ids, n, n > 0
}

// match calls fn with the seqs holding every word of ids (termIDs's),
// newest first, below before (0: no bound), until fn returns false. The
// index is flushed.
func (ix *roomIndex) match(ids []uint32, before int64, fn func(seq uint32) bool) {
	var lists [parley.MaxQueryTerms][]uint32
	ps := lists[:0]
	for _, id := range ids {
		p := ix.postings(id)
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
