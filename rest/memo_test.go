package rest

import (
	"bytes"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
	"unsafe"

	"parley"
)

func memoMessages() []parley.Message {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	edited := at.Add(time.Minute)
	return []parley.Message{
		{ID: "m1", RoomID: "r", Seq: 1, SenderID: "u1", SenderName: "ann", Body: "hello", ClientID: "c1", SentAt: at},
		{ID: "m2", RoomID: "r", Seq: 2, SenderID: "u2", SenderName: "bob", Body: "hi", ClientID: "c2", SentAt: at, EditedAt: &edited, Change: 1},
	}
}

func memoRooms() []roomEntryView {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	ms := memoMessages()
	return []roomEntryView{
		{Room: roomView{Room: parley.Room{ID: "r", Kind: "group", Title: "Room", MemberCount: 2, LastSeq: 2, LastActivityAt: at}}, LastMessage: &ms[1], Unread: 1},
		{Room: roomView{Room: parley.Room{ID: "d", Kind: "direct", LastActivityAt: at}, Peer: &parley.User{ID: "u2", Name: "bob"}}},
	}
}

// entriesOf returns the room list entries of views as the store returns
// them, and the peers of their rooms as Chat.Peer would.
func entriesOf(vs []roomEntryView) ([]parley.RoomEntry, func(*parley.Room) *parley.User) {
	es := make([]parley.RoomEntry, len(vs))
	peers := map[string]*parley.User{}
	for i, v := range vs {
		es[i] = parley.RoomEntry{Room: v.Room.Room, LastMessage: v.LastMessage, Unread: v.Unread, Mentions: v.Mentions, Notifications: v.Notifications}
		peers[v.Room.ID] = v.Room.Peer
	}
	return es, func(r *parley.Room) *parley.User { return peers[r.ID] }
}

// TestMemoPageMissesOnAnyChange: a history page is served from the memo
// only when every field encoded is what it was encoded from, also when
// what the messages point to changed in place since (the memo keeps deep
// copies).
func TestMemoPageMissesOnAnyChange(t *testing.T) {
	later := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	changes := map[string]func(ms []parley.Message){
		"id":          func(ms []parley.Message) { ms[0].ID = "x" },
		"room":        func(ms []parley.Message) { ms[0].RoomID = "x" },
		"seq":         func(ms []parley.Message) { ms[0].Seq = 9 },
		"sender":      func(ms []parley.Message) { ms[0].SenderID = "x" },
		"sender name": func(ms []parley.Message) { ms[0].SenderName = "x" },
		"body":        func(ms []parley.Message) { ms[1].Body = "hj" },
		"client id":   func(ms []parley.Message) { ms[0].ClientID = "x" },
		"sent at":     func(ms []parley.Message) { ms[0].SentAt = later },
		"edited":      func(ms []parley.Message) { ms[0].EditedAt = &later },
		"edited at":   func(ms []parley.Message) { *ms[1].EditedAt = later },
		"deleted":     func(ms []parley.Message) { ms[1].DeletedAt = &later },
		"change":      func(ms []parley.Message) { ms[1].Change = 2 },
		"one more":    func(ms []parley.Message) {},
	}
	for name, change := range changes {
		var m memo
		k := pageKey{room: "r", page: parley.Newest(50)}
		ms := memoMessages()
		put := m.putPage(k, ms, appendMessages(nil, ms))
		if got := m.page(k, memoMessages()); got != put {
			t.Fatalf("%s: an equal page missed the memo", name)
		}
		ms = slices.Clone(ms) // another slice: the memo compares it
		change(ms)            // a pointed-to time in place, for "edited at"
		if name == "one more" {
			ms = append(ms, ms[0])
		}
		if got := m.page(k, ms); got != nil {
			t.Errorf("%s: a changed page hit the memo", name)
		}
		if got := m.page(pageKey{room: "r", page: parley.Page{Before: 3, Limit: 50}}, memoMessages()); got != nil {
			t.Errorf("%s: another page of the room hit the memo", name)
		}
	}
}

// TestMemoRoomListMissesOnAnyChange: the same for a room list.
func TestMemoRoomListMissesOnAnyChange(t *testing.T) {
	later := time.Date(2026, 12, 1, 11, 0, 0, 0, time.UTC)
	changes := map[string]func(vs []roomEntryView){
		"title":            func(vs []roomEntryView) { vs[0].Room.Title = "x" },
		"kind":             func(vs []roomEntryView) { vs[0].Room.Kind = "x" },
		"capacity":         func(vs []roomEntryView) { vs[0].Room.Capacity = 5 },
		"member count":     func(vs []roomEntryView) { vs[0].Room.MemberCount = 3 },
		"last seq":         func(vs []roomEntryView) { vs[0].Room.LastSeq = 3 },
		"last change":      func(vs []roomEntryView) { vs[0].Room.LastChange = 3 },
		"last activity":    func(vs []roomEntryView) { vs[0].Room.LastActivityAt = later },
		"unread":           func(vs []roomEntryView) { vs[0].Unread = 0 },
		"mentions":         func(vs []roomEntryView) { vs[0].Mentions = 4 },
		"level":            func(vs []roomEntryView) { vs[0].Notifications = parley.NotifyNone },
		"last message":     func(vs []roomEntryView) { vs[0].LastMessage.Body = "x" },
		"new last message": func(vs []roomEntryView) { vs[1].LastMessage = &parley.Message{} },
		"no last message":  func(vs []roomEntryView) { vs[0].LastMessage = nil },
		"edited at":        func(vs []roomEntryView) { *vs[0].LastMessage.EditedAt = later },
		"peer name":        func(vs []roomEntryView) { vs[1].Room.Peer.Name = "x" },
		"no peer":          func(vs []roomEntryView) { vs[1].Room.Peer = nil },
		"order":            func(vs []roomEntryView) { vs[0], vs[1] = vs[1], vs[0] },
	}
	for name, change := range changes {
		var m memo
		k := roomsKey{user: "u1", limit: 50}
		vs := memoRooms()
		src, _ := entriesOf(vs)
		put := m.putRoomList(k, src, vs, "", appendRoomList(nil, vs, ""))
		ee, peer := entriesOf(memoRooms())
		if got := m.roomList(k, ee, "", peer); got != put {
			t.Fatalf("%s: an equal room list missed the memo", name)
		}
		if got := m.roomList(k, ee, "next", peer); got != nil {
			t.Errorf("%s: another next cursor hit the memo", name)
		}
		if got := m.roomList(roomsKey{user: "u2", limit: 50}, ee, "", peer); got != nil {
			t.Errorf("%s: another user's list hit the memo", name)
		}
		change(vs)
		es, peer := entriesOf(vs)
		if got := m.roomList(k, es, "", peer); got != nil {
			t.Errorf("%s: a changed room list hit the memo", name)
		}
	}
}

// TestMemoSameSlice: handed the very slice an entry was encoded from, the
// memo trusts it (a store never changes what it returned, parley.Store)
// and serves the entry without comparing, except a direct room's peer,
// which comes from elsewhere; another slice is compared as before. The
// in-place changes below break that rule on purpose, to tell the two
// paths apart.
func TestMemoSameSlice(t *testing.T) {
	var m memo
	pk := pageKey{room: "r", page: parley.Newest(50)}
	ms := memoMessages()
	put := m.putPage(pk, ms, appendMessages(nil, ms))
	ms[0].Body = "changed behind the memo's back"
	if got := m.page(pk, ms); got != put {
		t.Error("the same slice of messages was compared, not trusted")
	}
	if got := m.page(pk, slices.Clone(ms)); got != nil {
		t.Error("another slice of changed messages hit the memo")
	}
	if got := m.page(pk, ms[:1]); got != nil {
		t.Error("a shorter slice from the same first message hit the memo")
	}

	rk := roomsKey{user: "u1", limit: 50}
	vs := memoRooms()
	es, peer := entriesOf(vs)
	rput := m.putRoomList(rk, es, vs, "", appendRoomList(nil, vs, ""))
	es[0].Room.Title = "changed behind the memo's back" // a group room
	if got := m.roomList(rk, es, "", peer); got != rput {
		t.Error("the same slice of rooms was compared, not trusted")
	}
	renamed := func(r *parley.Room) *parley.User {
		if u := peer(r); u != nil {
			return &parley.User{ID: u.ID, Name: "bobby"}
		}
		return nil
	}
	if got := m.roomList(rk, es, "", renamed); got != nil {
		t.Error("a direct room's renamed peer hit the memo through the same slice")
	}
}

// TestMemoBody: what the memo serves is the encoding with its newline
// and its length.
func TestMemoBody(t *testing.T) {
	var m memo
	ms := memoMessages()
	want := append(appendMessages(nil, ms), '\n')
	b := m.putPage(pageKey{room: "r"}, ms, encode(func(b []byte) []byte { return appendMessages(b, ms) }))
	if !bytes.Equal(b.body, want) || b.clen[0] != fmt.Sprint(len(want)) {
		t.Errorf("memo = %q (Content-Length %s), want %q (%d)", b.body, b.clen[0], want, len(want))
	}
}

// TestMemoBounded: however many pages are asked for, the memo holds at
// most memoMaxBytes by its count, and its count is the sum of its
// entries'.
func TestMemoBounded(t *testing.T) {
	var m memo
	ms := memoMessages()
	body := appendMessages(nil, ms)
	vs := memoRooms()
	for i := range 200_000 {
		if i%2 == 0 {
			m.putPage(pageKey{room: "r", page: parley.Page{Before: int64(i), Limit: 50}}, ms, body)
		} else {
			m.putRoomList(roomsKey{user: fmt.Sprint(i)}, nil, vs, "", body)
		}
		if i%1000 == 0 {
			m.putPage(pageKey{room: "r", page: parley.Page{Before: 0, Limit: 50}}, ms, body) // a replaced entry
		}
	}
	sum := 0
	for _, e := range m.pages {
		sum += e.cost
	}
	for _, e := range m.rooms {
		sum += e.cost
	}
	if m.bytes != sum || m.bytes > memoMaxBytes {
		t.Errorf("memo counts %d bytes, its entries %d; want equal and at most %d", m.bytes, sum, memoMaxBytes)
	}
	if len(m.pages)+len(m.rooms) < memoMaxBytes/(len(body)+256*4) {
		t.Errorf("memo holds %d entries; want it to fill up to its bound", len(m.pages)+len(m.rooms))
	}
}

// TestNewRequestID: request ids look like parley.NewID's and differ.
func TestNewRequestID(t *testing.T) {
	seen := map[string]bool{}
	for range 1000 {
		id := newRequestID()
		if len(id) != len(parley.NewID()) || strings.Trim(id, "abcdefghijklmnopqrstuvwxyz234567") != "" {
			t.Fatalf("request id %q is not 26 characters of parley.NewID's alphabet", id)
		}
		if seen[id] {
			t.Fatalf("request id %q twice", id)
		}
		seen[id] = true
	}
}

// TestMemoSameAddressLater: once the slice an entry was encoded from is
// collected, a new slice that the allocator puts at the same address is
// not taken for it (the entry's pointer is weak, and a weak pointer knows
// its object is gone): it is compared, and differs.
func TestMemoSameAddressLater(t *testing.T) {
	var m memo
	k := pageKey{room: "r", page: parley.Newest(50)}
	put := func() uintptr {
		ms := memoMessages()
		m.putPage(k, ms, appendMessages(nil, ms))
		return uintptr(unsafe.Pointer(&ms[0]))
	}
	old := put()
	for range 3 {
		runtime.GC()
	}
	var keep [][]parley.Message // held, so that the allocator moves on through its free slots
	for i := range 200_000 {
		ms := make([]parley.Message, 2)
		if uintptr(unsafe.Pointer(&ms[0])) != old {
			keep = append(keep, ms)
			if i%5000 == 4999 {
				keep = nil
				runtime.GC()
			}
			continue
		}
		ms[0].Body, ms[1].Body = "not", "the same"
		if m.page(k, ms) != nil {
			t.Fatal("a new slice at a collected slice's address hit the memo")
		}
		return
	}
	t.Skip("the allocator never reused the address; nothing to check")
}
