package cache

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"parley"
)

// # The index's layout
//
// A room's index is laid out for Apply's cost and the GC's: almost nothing
// in it is a pointer, so the collector marks a few large arrays per room
// rather than eight objects a message and one a word.
//
//   - Words are numbered by a dictionary shared by every room's index
//     (word → uint32 id). Each room's index holds one reference to each
//     word it files a message under; a word no index refers to any more
//     leaves the dictionary, so it shrinks as rooms lose their indexes or
//     their words. It has its own lock: builds run outside Store.mu.
//   - A room's postings are map[uint32]postSpan (word id → a run of its pool,
//     one []uint32 for all the room's words): a word's seqs, ascending,
//     in pool[off:off+n], with room to grow to cap. A run that outgrows its
//     room moves to the pool's end (its old place is dead); the pool is
//     compacted when half of it is dead.
//   - A room's messages are fixed-size records (msgRec, seq i+1 at i):
//     times as Unix nanoseconds, strings as offsets into an append-only
//     byte arena. A message is materialised only for a hit, its strings
//     pointing into the arena (unsafe.String): the arena's bytes are never
//     written again once appended to (growth and compaction copy into a
//     new array), so a string handed out stays valid and unchanged. A
//     message the records cannot hold exactly (a time that is not UTC or
//     Local, or has a monotonic reading, or falls outside int64 Unix
//     nanoseconds; a string longer than 65,535 bytes but the body; another
//     room's id) is kept whole in a side map: answers are the very values
//     applied or read.

// A dictionary numbers the words of every room's index.
type dictionary struct {
	mu    sync.RWMutex
	ids   map[string]uint32
	words []dictWord // by id; refs 0 and word "" if free
	free  []uint32
	bytes atomic.Int64 // estimate of its heap
}

type dictWord struct {
	word string
	refs int32
}

const dictWordSize = 16 + 4 + 32 + 24 // key header and id in the map with its share of the groups, the words entry

// intern returns w's id, adding w (with no reference) if it is new. d.mu
// is held for writing.
func (d *dictionary) intern(w []byte) uint32 {
	if id, ok := d.ids[string(w)]; ok {
		return id
	}
	word := string(w)
	if d.ids == nil {
		d.ids = map[string]uint32{}
	}
	var id uint32
	if n := len(d.free); n > 0 {
		id, d.free = d.free[n-1], d.free[:n-1]
		d.words[id] = dictWord{word: word}
	} else {
		id = uint32(len(d.words))
		d.words = append(d.words, dictWord{word: word})
	}
	d.ids[word] = id
	d.bytes.Add(dictWordSize + int64(len(word)))
	return id
}

// unref drops a reference to the word id; the last one removes the word.
// d.mu is held for writing.
func (d *dictionary) unref(id uint32) {
	e := &d.words[id]
	if e.refs--; e.refs > 0 {
		return
	}
	delete(d.ids, e.word)
	d.bytes.Add(-dictWordSize - int64(len(e.word)))
	*e = dictWord{}
	d.free = append(d.free, id)
}

// size reports the number of words; for tests.
func (d *dictionary) size() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.ids)
}

// A postSpan is a word's postings in its room's pool: pool[off:off+n],
// ascending, with room for cap.
type postSpan struct{ off, n, cap uint32 }

// A msgRec is a message of the index: its strings in the arena (ID,
// SenderID, SenderName and ClientID from off, in that order; the body at
// body) and its times in Unix nanoseconds.
type msgRec struct {
	off, body, bodyLen                uint32
	idLen, senderLen, nameLen, cliLen uint16
	flags                             uint8
	sent, edited, deleted             int64
	change                            int64
}

const (
	recOdd          = 1 << iota // the message is in odd
	recSentLocal                // SentAt is in time.Local (else UTC)
	recEdited                   // EditedAt is set
	recEditedLocal              //
	recDeleted                  // DeletedAt is set
	recDeletedLocal             //
)

const (
	recSize  = int64(unsafe.Sizeof(msgRec{}))
	spanSize = 4 + 12 + 10 // map entry (id, postSpan) with its control byte and share of empty slots
	oddSize  = int64(unsafe.Sizeof(parley.Message{})) + 48
	maxShort = 1<<16 - 1
	maxArena = 1<<32 - 1
)

// packTime returns t as Unix nanoseconds and whether it is in Local, or ok
// false if that does not give t back exactly.
func packTime(t time.Time) (ns int64, local, ok bool) {
	ns = t.UnixNano()
	if u := time.Unix(0, ns).UTC(); u == t {
		return ns, false, true
	}
	if l := time.Unix(0, ns); l == t {
		return ns, true, true
	}
	return 0, false, false
}

func unpackTime(ns int64, local bool) time.Time {
	if local {
		return time.Unix(0, ns)
	}
	return time.Unix(0, ns).UTC()
}

func packOptTime(t *time.Time, set, localBit uint8) (ns int64, flags uint8, ok bool) {
	if t == nil {
		return 0, 0, true
	}
	ns, local, ok := packTime(*t)
	flags = set
	if local {
		flags |= localBit
	}
	return ns, flags, ok
}

// appendStr appends s to the arena and returns its offset, or false if the
// arena would outgrow its offsets.
func (ix *roomIndex) appendStr(s string) (uint32, bool) {
	off := len(ix.arena)
	if int64(off)+int64(len(s)) > maxArena {
		return 0, false
	}
	c := cap(ix.arena)
	ix.arena = append(ix.arena, s...)
	ix.bytes += int64(cap(ix.arena) - c)
	return uint32(off), true
}

// pack makes m's record, appending its strings to the arena (all of them,
// or only the body if keep is a record whose other strings m shares). A
// message the record cannot hold exactly is put in odd.
func (ix *roomIndex) pack(m *parley.Message, keep *msgRec) msgRec {
	var r msgRec
	sent, local, ok1 := packTime(m.SentAt)
	edited, ef, ok2 := packOptTime(m.EditedAt, recEdited, recEditedLocal)
	deleted, df, ok3 := packOptTime(m.DeletedAt, recDeleted, recDeletedLocal)
	ok := ok1 && ok2 && ok3 && m.RoomID == ix.room && len(m.ID) <= maxShort && len(m.SenderID) <= maxShort &&
		len(m.SenderName) <= maxShort && len(m.ClientID) <= maxShort
	if ok && keep != nil && keep.flags&recOdd == 0 {
		r.off, r.idLen, r.senderLen, r.nameLen, r.cliLen = keep.off, keep.idLen, keep.senderLen, keep.nameLen, keep.cliLen
		ok = ix.str(r.off, int(r.idLen)) == m.ID && ix.str(r.off+uint32(r.idLen), int(r.senderLen)) == m.SenderID &&
			ix.str(r.off+uint32(r.idLen)+uint32(r.senderLen), int(r.nameLen)) == m.SenderName &&
			ix.str(r.off+uint32(r.idLen)+uint32(r.senderLen)+uint32(r.nameLen), int(r.cliLen)) == m.ClientID
		if !ok {
			keep, ok = nil, true
		}
	} else {
		keep = nil
	}
	if ok && keep == nil {
		var ok4, ok5, ok6, ok7 bool
		r.off, ok4 = ix.appendStr(m.ID)
		_, ok5 = ix.appendStr(m.SenderID)
		_, ok6 = ix.appendStr(m.SenderName)
		_, ok7 = ix.appendStr(m.ClientID)
		r.idLen, r.senderLen, r.nameLen, r.cliLen = uint16(len(m.ID)), uint16(len(m.SenderID)), uint16(len(m.SenderName)), uint16(len(m.ClientID))
		ok = ok4 && ok5 && ok6 && ok7
	}
	if ok {
		r.body, ok = ix.appendStr(m.Body)
		r.bodyLen = uint32(len(m.Body))
	}
	if !ok {
		if ix.odd == nil {
			ix.odd = map[uint32]parley.Message{}
		}
		ix.odd[uint32(m.Seq)] = *m
		ix.bytes += oddSize + msgBytes(m)
		return msgRec{flags: recOdd}
	}
	r.sent, r.edited, r.deleted, r.change = sent, edited, deleted, m.Change
	r.flags = ef | df
	if local {
		r.flags |= recSentLocal
	}
	return r
}

// str is the arena's string at off, sharing its bytes.
func (ix *roomIndex) str(off uint32, n int) string {
	if n == 0 {
		return ""
	}
	return unsafe.String(&ix.arena[off], n)
}

// message materialises the message with that seq; its strings share the
// arena's bytes.
func (ix *roomIndex) message(seq uint32) parley.Message {
	r := &ix.recs[seq-1]
	if r.flags&recOdd != 0 {
		return ix.odd[seq]
	}
	o := r.off
	m := parley.Message{Seq: int64(seq), RoomID: ix.room, Change: r.change}
	m.ID = ix.str(o, int(r.idLen))
	o += uint32(r.idLen)
	m.SenderID = ix.str(o, int(r.senderLen))
	o += uint32(r.senderLen)
	m.SenderName = ix.str(o, int(r.nameLen))
	o += uint32(r.nameLen)
	m.ClientID = ix.str(o, int(r.cliLen))
	m.Body = ix.str(r.body, int(r.bodyLen))
	m.SentAt = unpackTime(r.sent, r.flags&recSentLocal != 0)
	if r.flags&recEdited != 0 {
		t := unpackTime(r.edited, r.flags&recEditedLocal != 0)
		m.EditedAt = &t
	}
	if r.flags&recDeleted != 0 {
		t := unpackTime(r.deleted, r.flags&recDeletedLocal != 0)
		m.DeletedAt = &t
	}
	return m
}

// orderKey is the message with that seq with only the fields that order
// search hits: SentAt, RoomID and Seq.
func (ix *roomIndex) orderKey(seq uint32) parley.Message {
	r := &ix.recs[seq-1]
	if r.flags&recOdd != 0 {
		m := ix.odd[seq]
		return parley.Message{SentAt: m.SentAt, RoomID: m.RoomID, Seq: m.Seq}
	}
	return parley.Message{SentAt: unpackTime(r.sent, r.flags&recSentLocal != 0), RoomID: ix.room, Seq: int64(seq)}
}

// body is the text of the message with that seq.
func (ix *roomIndex) bodyOf(seq uint32) string {
	r := &ix.recs[seq-1]
	if r.flags&recOdd != 0 {
		return ix.odd[seq].Body
	}
	return ix.str(r.body, int(r.bodyLen))
}

// deletedAt reports whether the message with that seq is a tombstone.
func (ix *roomIndex) deletedAt(seq uint32) bool {
	r := &ix.recs[seq-1]
	if r.flags&recOdd != 0 {
		return ix.odd[seq].DeletedAt != nil
	}
	return r.flags&recDeleted != 0
}

// change is the change of the message with that seq.
func (ix *roomIndex) changeOf(seq uint32) int64 {
	r := &ix.recs[seq-1]
	if r.flags&recOdd != 0 {
		return ix.odd[seq].Change
	}
	return r.change
}

// sentTime is the SentAt of the message with that seq.
func (ix *roomIndex) sentTime(seq uint32) time.Time {
	r := &ix.recs[seq-1]
	if r.flags&recOdd != 0 {
		return ix.odd[seq].SentAt
	}
	return unpackTime(r.sent, r.flags&recSentLocal != 0)
}

// compactArena copies the live strings into a new arena once half of it
// is dead. The old array is left as it is, for the strings handed out.
func (ix *roomIndex) compactArena() {
	if ix.dead < 4096 || ix.dead*2 < int64(len(ix.arena)) {
		return
	}
	old := ix.arena
	ix.bytes -= int64(cap(old))
	ix.arena = make([]byte, 0, int64(len(old))-ix.dead)
	ix.bytes += int64(cap(ix.arena))
	for i := range ix.recs {
		r := &ix.recs[i]
		if r.flags&recOdd != 0 {
			continue
		}
		n := int(r.idLen) + int(r.senderLen) + int(r.nameLen) + int(r.cliLen)
		off := uint32(len(ix.arena))
		ix.arena = append(ix.arena, old[r.off:int(r.off)+n]...)
		r.off = off
		off = uint32(len(ix.arena))
		ix.arena = append(ix.arena, old[r.body:r.body+r.bodyLen]...)
		r.body = off
	}
	ix.dead = 0
}

// addPosting files seq under the word id, reporting whether the room had
// no posting for it yet.
func (ix *roomIndex) addPosting(id, seq uint32) (isNew bool) {
	sp, ok := ix.terms[id]
	if !ok {
		isNew = true
		sp = ix.alloc(2)
	}
	p := ix.pool[sp.off : sp.off+sp.n]
	i := len(p)
	if n := len(p); n > 0 && p[n-1] >= seq {
		var found bool
		if i, found = slices.BinarySearch(p, seq); found {
			return false
		}
	}
	if sp.n == sp.cap {
		sp = ix.grow(sp)
	}
	p = ix.pool[sp.off : sp.off+sp.n+1]
	copy(p[i+1:], p[i:sp.n])
	p[i] = seq
	sp.n++
	ix.terms[id] = sp
	return isNew
}

// alloc takes a run of n slots at the pool's end.
func (ix *roomIndex) alloc(n uint32) postSpan {
	off := len(ix.pool)
	c := cap(ix.pool)
	ix.pool = slices.Grow(ix.pool, int(n))[:off+int(n)]
	ix.pbytes += 4 * int64(cap(ix.pool)-c)
	return postSpan{off: uint32(off), cap: n}
}

// grow doubles a full run's room: in place at the pool's end, else by
// moving it there.
func (ix *roomIndex) grow(sp postSpan) postSpan {
	if int(sp.off+sp.cap) == len(ix.pool) {
		more := ix.alloc(sp.cap)
		_ = more
		sp.cap *= 2
		return sp
	}
	ns := ix.alloc(sp.cap * 2)
	copy(ix.pool[ns.off:], ix.pool[sp.off:sp.off+sp.n])
	ix.poolDead += int64(sp.cap)
	ns.n = sp.n
	return ns
}

// removePosting takes seq out of the word id's postings, reporting whether
// the room has none left for it.
func (ix *roomIndex) removePosting(id, seq uint32) (gone bool) {
	sp, ok := ix.terms[id]
	if !ok {
		return false
	}
	p := ix.pool[sp.off : sp.off+sp.n]
	i, found := slices.BinarySearch(p, seq)
	if !found {
		return false
	}
	if sp.n == 1 {
		delete(ix.terms, id)
		ix.pbytes -= spanSize
		ix.poolDead += int64(sp.cap)
		return true
	}
	copy(p[i:], p[i+1:])
	sp.n--
	ix.terms[id] = sp
	return false
}

// compactPool copies the live runs into a new pool once half of it is
// dead.
func (ix *roomIndex) compactPool() {
	if ix.poolDead < 1024 || ix.poolDead*2 < int64(len(ix.pool)) {
		return
	}
	old := ix.pool
	ix.pbytes -= 4 * int64(cap(old))
	ix.pool = make([]uint32, 0, int64(len(old))-ix.poolDead)
	ix.pbytes += 4 * int64(cap(ix.pool))
	for id, sp := range ix.terms {
		off := uint32(len(ix.pool))
		ix.pool = append(ix.pool, old[sp.off:sp.off+sp.cap]...)
		sp.off = off
		ix.terms[id] = sp
	}
	ix.poolDead = 0
}

// postings is the word id's postings, or nil.
func (ix *roomIndex) postings(id uint32) []uint32 {
	sp, ok := ix.terms[id]
	if !ok {
		return nil
	}
	return ix.pool[sp.off : sp.off+sp.n : sp.off+sp.n]
}
