package rest

import (
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"
	"weak"

	"parley"
)

// The two hottest responses are read far more often than they change: a
// room list until a message arrives in one of its rooms, a history page
// until an edit or a deletion. A memo keeps the bytes of the last answer
// of each (the body and its Content-Length) beside a copy of what they
// were encoded from, and serves them again when the handler's fresh read
// compares equal to that copy: the read (and so every check of the
// caller's membership and every guarantee of it) happens on every
// request, only the encoding is skipped. Comparing is a few hundred
// nanoseconds where encoding is 10-20 µs.
//
// The output is a pure function of the compared values, so a hit sends
// exactly what encoding them would (or, on the identity path below, of
// values that cannot have changed). Entries are never changed once
// stored; a miss replaces its key's entry.
//
// A store never changes a result it has returned (parley.Store), and the
// cache hands every reader the same slice while a page stays as it was.
// A read that returns the very slice an entry was encoded from therefore
// returns what it was encoded from, and the memo serves it without
// comparing; only a direct room's peer, which the room list looks up
// apart from the store's answer, is compared still. The entry keeps a
// weak pointer to that slice: a strong one would keep alive the arrays
// the store has let go, past the bounds of its own memory.

// memoMaxBytes bounds the memory the memo holds, over both kinds, as
// counted by memoBody.cost.
const memoMaxBytes = 16 << 20

// memoBody is an encoded 200 response.
type memoBody struct {
	body []byte   // ends with the newline writeEncoded adds
	clen []string // the Content-Length header's value
	cost int      // bytes held: the body, the copies and the entry (roughly)
}

func newMemoBody(b []byte, items int) memoBody {
	return memoBody{body: b, clen: []string{strconv.Itoa(len(b))}, cost: len(b) + 256*(items+1)}
}

type roomsKey struct {
	user, cursor string
	limit        int
}

type roomsMemo struct {
	src   origin[parley.RoomEntry] // the store's answer they were made from
	views []roomEntryView          // deep copies: nothing they point to is shared
	next  string
	memoBody
}

type pageKey struct {
	room string
	page parley.Page
}

type pageMemo struct {
	src  origin[parley.Message] // the store's answer they were copied from
	msgs []parley.Message       // deep copies
	memoBody
}

// origin identifies a slice a store returned: by its first element's
// address and its length, which together name the same elements.
type origin[T any] struct {
	first weak.Pointer[T]
	n     int
}

func originOf[T any](s []T) origin[T] {
	if len(s) == 0 {
		return origin[T]{}
	}
	return origin[T]{first: weak.Make(&s[0]), n: len(s)}
}

// is reports whether s is that slice. A weak pointer's Value is nil once
// its array is collected, so an array allocated later at the same address
// is never taken for it.
func (o origin[T]) is(s []T) bool {
	return len(s) > 0 && len(s) == o.n && o.first.Value() == &s[0]
}

// memo is the memo of one Handler; the zero value is ready.
type memo struct {
	mu    sync.Mutex
	rooms map[roomsKey]*roomsMemo
	pages map[pageKey]*pageMemo
	bytes int // the cost of the entries held
}

// roomList returns the memo of k if it was encoded from rooms and next,
// each direct room with the peer that peer returns (a group room's peer
// is nil), else nil. It compares the entries as the store returned them:
// a hit builds no views.
func (m *memo) roomList(k roomsKey, rooms []parley.RoomEntry, next string, peer func(*parley.Room) *parley.User) *memoBody {
	m.mu.Lock()
	e := m.rooms[k]
	m.mu.Unlock()
	if e == nil || e.next != next || len(e.views) != len(rooms) {
		return nil
	}
	same := e.src.is(rooms)
	for i := range rooms {
		r := &rooms[i]
		if same && r.Room.Kind != parley.KindDirect {
			continue
		}
		if !roomEntryEqual(&e.views[i], r, peer) {
			return nil
		}
	}
	return &e.memoBody
}

// putRoomList stores the encoding b of views, made from rooms.
func (m *memo) putRoomList(k roomsKey, rooms []parley.RoomEntry, views []roomEntryView, next string, b []byte) *memoBody {
	e := &roomsMemo{src: originOf(rooms), views: make([]roomEntryView, len(views)), next: next, memoBody: newMemoBody(b, len(views))}
	for i := range views {
		e.views[i] = copyRoomEntry(&views[i])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	memoPut(m, &m.rooms, k, e)
	return &e.memoBody
}

func (m *memo) page(k pageKey, msgs []parley.Message) *memoBody {
	m.mu.Lock()
	e := m.pages[k]
	m.mu.Unlock()
	if e == nil || len(e.msgs) != len(msgs) {
		return nil
	}
	if e.src.is(msgs) {
		return &e.memoBody
	}
	for i := range msgs {
		if !messageEqual(&e.msgs[i], &msgs[i]) {
			return nil
		}
	}
	return &e.memoBody
}

func (m *memo) putPage(k pageKey, msgs []parley.Message, b []byte) *memoBody {
	e := &pageMemo{src: originOf(msgs), msgs: make([]parley.Message, len(msgs)), memoBody: newMemoBody(b, len(msgs))}
	for i := range msgs {
		e.msgs[i] = copyMessage(&msgs[i])
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	memoPut(m, &m.pages, k, e)
	return &e.memoBody
}

// makeRoom drops entries, any of them, until n more bytes fit. m.mu is
// held.
func (m *memo) makeRoom(n int) {
	if !memoDrop(m, m.rooms, n) {
		memoDrop(m, m.pages, n)
	}
}

// memoEntry is an entry of either kind: what it costs.
type memoEntry interface{ size() int }

func (b *memoBody) size() int { return b.cost }

// memoPut stores e under k in *entries, in place of k's entry, after
// making room for it. m.mu is held.
func memoPut[K comparable, E memoEntry](m *memo, entries *map[K]E, k K, e E) {
	if *entries == nil {
		*entries = map[K]E{}
	}
	if old, ok := (*entries)[k]; ok {
		m.bytes -= old.size()
		delete(*entries, k)
	}
	m.makeRoom(e.size())
	(*entries)[k] = e
	m.bytes += e.size()
}

// memoDrop drops entries, any of them, until n more bytes fit, and
// reports whether they do. m.mu is held.
func memoDrop[K comparable, E memoEntry](m *memo, entries map[K]E, n int) bool {
	for k, e := range entries {
		if m.bytes+n <= memoMaxBytes {
			return true
		}
		m.bytes -= e.size()
		delete(entries, k)
	}
	return m.bytes+n <= memoMaxBytes
}

// writeMemo writes a memo's 200 response (past a statusWriter, which it
// tells the status itself: one frame less on the stack).
func writeMemo(w http.ResponseWriter, b *memoBody) error {
	if sw, ok := w.(*statusWriter); ok && sw.code == 0 {
		sw.code = http.StatusOK
		w = sw.ResponseWriter
	}
	h := w.Header()
	h["Content-Type"] = jsonType
	h["Cache-Control"] = noStore
	h["Content-Length"] = b.clen
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b.body)
	return err
}

// Header values shared by every response that sets them (net/http only
// reads them).
var (
	jsonType = []string{"application/json"}
	noStore  = []string{"no-store"}
)

// The equalities compare every field the encoders write, times by ==
// (the same instant in the same location encodes alike).

func roomEntryEqual(a *roomEntryView, b *parley.RoomEntry, peer func(*parley.Room) *parley.User) bool {
	if a.Unread != b.Unread || a.Mentions != b.Mentions || notifyLevel(a.Notifications) != notifyLevel(b.Notifications) || a.Room.Room != b.Room || !optMessageEqual(a.LastMessage, b.LastMessage) {
		return false
	}
	if b.Room.Kind != parley.KindDirect {
		return a.Room.Peer == nil
	}
	return optUserEqual(a.Room.Peer, peer(&b.Room))
}

func optUserEqual(a, b *parley.User) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.ID == b.ID && a.Name == b.Name
}

func optMessageEqual(a, b *parley.Message) bool {
	if a == nil || b == nil {
		return a == b
	}
	return messageEqual(a, b)
}

func messageEqual(a, b *parley.Message) bool {
	return a.Seq == b.Seq && a.Change == b.Change && a.ID == b.ID && a.RoomID == b.RoomID &&
		a.SenderID == b.SenderID && a.SenderName == b.SenderName && a.Body == b.Body &&
		a.ClientID == b.ClientID && a.SentAt == b.SentAt && a.Mentions == b.Mentions && a.Files == b.Files &&
		optTimeEqual(a.EditedAt, b.EditedAt) && optTimeEqual(a.DeletedAt, b.DeletedAt) &&
		slices.Equal(a.Reactions, b.Reactions) && // Me too: a page is per caller once it has reactions
		replyEqual(a.ReplyTo, b.ReplyTo) && threadEqual(a.Thread, b.Thread) && // an excerpt moves with its root, not the reply's change
		pinEqual(a.Pinned, b.Pinned)
}

func pinEqual(a, b *parley.Pin) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.By == b.By && a.At.Equal(b.At) && a.Change == b.Change
}

func replyEqual(a, b *parley.ReplyRef) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func threadEqual(a, b *parley.Thread) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Replies == b.Replies && a.LastReplyAt.Equal(b.LastReplyAt) && slices.Equal(a.Participants, b.Participants)
}

func optTimeEqual(a, b *time.Time) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func copyRoomEntry(e *roomEntryView) roomEntryView {
	c := *e
	if e.Room.Peer != nil {
		p := *e.Room.Peer
		c.Room.Peer = &p
	}
	if e.LastMessage != nil {
		m := copyMessage(e.LastMessage)
		c.LastMessage = &m
	}
	return c
}

func copyMessage(m *parley.Message) parley.Message {
	c := *m
	if m.EditedAt != nil {
		t := *m.EditedAt
		c.EditedAt = &t
	}
	if m.DeletedAt != nil {
		t := *m.DeletedAt
		c.DeletedAt = &t
	}
	c.Reactions = slices.Clone(m.Reactions)
	if m.Pinned != nil {
		p := *m.Pinned
		c.Pinned = &p
	}
	if m.ReplyTo != nil {
		r := *m.ReplyTo
		c.ReplyTo = &r
	}
	if m.Thread != nil {
		t := *m.Thread
		t.Participants = slices.Clone(t.Participants)
		c.Thread = &t
	}
	return c
}
