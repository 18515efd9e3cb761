package parleytest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"parley"
)

// testCapacity: 1,000 concurrent joins of a room with 100 free seats seat
// exactly 100 users.
func testCapacity(t *testing.T, newStore NewStoreFunc) {
	const n, seats = 1000, 100
	s := newStore(t, nil)
	ctx := context.Background()
	owner := MustCreateUser(t, s, "owner")
	// The creator takes one seat: capacity 101 leaves 100.
	room := MustCreateRoom(t, s, owner, "seats", seats+1)
	if room.MemberCount != 1 || room.Capacity != seats+1 {
		t.Fatalf("CreateRoom() = %s capacity %d, want 1 member of %d", roomString(room), room.Capacity, seats+1)
	}
	users := MustCreateUsers(t, s, "fan", n)

	var joined, full atomic.Int64
	in := make([]bool, n)
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() {
			r, ok, err := s.Join(ctx, room.ID, u.ID)
			switch {
			case err == nil && ok:
				joined.Add(1)
				in[i] = true
				if r.MemberCount > r.Capacity {
					t.Errorf("Join() = %s, over capacity %d", roomString(r), r.Capacity)
				}
			case parley.ErrorCode(err) == parley.CodeRoomFull:
				full.Add(1)
			default:
				t.Errorf("Join(%s) = %v, %v, want joined or room_full", u.Name, ok, err)
			}
		})
	}
	wg.Wait()
	if joined.Load() != seats || full.Load() != n-seats {
		t.Errorf("%d concurrent joins: %d joined, %d room_full; want %d, %d", n, joined.Load(), full.Load(), seats, n-seats)
	}
	after := MustRoom(t, s, room.ID)
	if after.MemberCount != seats+1 || !after.Full() {
		t.Errorf("Room() = %s, want %d members (full)", roomString(after), seats+1)
	}
	members, err := s.Members(ctx, room.ID)
	if err != nil || len(members) != seats+1 {
		t.Errorf("Members() = %d ids, %v, want %d", len(members), err, seats+1)
	}

	member := users[slices.Index(in, true)]
	outsider := users[slices.Index(in, false)]
	// A member joining again changes nothing, even in a full room.
	r, ok, err := s.Join(ctx, room.ID, member.ID)
	if err != nil || ok || r.MemberCount != seats+1 {
		t.Errorf("second Join() = %s, %v, %v, want unchanged, false, nil", roomString(r), ok, err)
	}
	_, _, err = s.Join(ctx, room.ID, outsider.ID)
	wantCode(t, "Join(full room)", err, parley.CodeRoomFull)

	// Leaving frees a seat.
	r, err = s.Leave(ctx, room.ID, member.ID)
	if err != nil || r.MemberCount != seats {
		t.Errorf("Leave() = %s, %v, want %d members", roomString(r), err, seats)
	}
	r, err = s.Leave(ctx, room.ID, member.ID)
	if err != nil || r.MemberCount != seats {
		t.Errorf("Leave() again = %s, %v, want unchanged %d members", roomString(r), err, seats)
	}
	if _, err := s.Member(ctx, room.ID, member.ID); parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("Member(left) error = %v, want not_found", err)
	}
	r, ok, err = s.Join(ctx, room.ID, outsider.ID)
	if err != nil || !ok || r.MemberCount != seats+1 {
		t.Errorf("Join() after a leave = %s, %v, %v, want %d members, true", roomString(r), ok, err, seats+1)
	}

	// Capacity 0 is unlimited.
	open := MustCreateRoom(t, s, owner, "open", 0)
	for _, u := range users[:10] {
		open = MustJoin(t, s, open, u)
	}
	if open.MemberCount != 11 || open.Full() {
		t.Errorf("unlimited room after 10 joins = %s, want 11 members", roomString(open))
	}
}

// testRoomList: newest activity first, last message, unread counts.
func testRoomList(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, nil)
	ctx := context.Background()
	u, v, w := MustCreateUser(t, s, "u"), MustCreateUser(t, s, "v"), MustCreateUser(t, s, "w")
	r1 := MustCreateRoom(t, s, u, "r1", 0)
	r2 := MustCreateRoom(t, s, u, "r2", 0)
	r3 := MustCreateRoom(t, s, u, "r3", 0)

	ids := func(entries []parley.RoomEntry) []string {
		var ids []string
		for _, e := range entries {
			ids = append(ids, e.Room.Title)
		}
		return ids
	}
	list := func(user parley.User) []parley.RoomEntry {
		t.Helper()
		entries, next, err := s.Rooms(ctx, user.ID, "", 100)
		if err != nil || next != "" {
			t.Fatalf("Rooms(%s) next %q error %v", user.Name, next, err)
		}
		return entries
	}

	got := list(u)
	if want := []string{"r3", "r2", "r1"}; !slices.Equal(ids(got), want) {
		t.Errorf("Rooms() = %v, want %v (newest first)", ids(got), want)
	}
	for _, e := range got {
		if e.LastMessage != nil || e.Unread != 0 {
			t.Errorf("Rooms() entry %s = last %v unread %d, want nil, 0 (empty room)", e.Room.Title, e.LastMessage, e.Unread)
		}
	}

	m1 := MustSend(t, s, r1, u, "hello")
	got = list(u)
	if want := []string{"r1", "r3", "r2"}; !slices.Equal(ids(got), want) {
		t.Errorf("Rooms() after a message in r1 = %v, want %v", ids(got), want)
	}
	if e := got[0]; e.LastMessage == nil || e.LastMessage.ID != m1.ID || e.LastMessage.Body != "hello" ||
		e.LastMessage.Seq != 1 || e.LastMessage.SenderName != u.Name || e.Room.LastSeq != 1 || e.Unread != 0 {
		t.Errorf("Rooms()[0] = %+v (last %+v), want r1 with its last message and no unread", e, e.LastMessage)
	}

	// A new member starts at the room's last seq.
	MustJoin(t, s, r1, v)
	if m, err := s.Member(ctx, r1.ID, v.ID); err != nil || m.ReadSeq != 1 {
		t.Errorf("Member(new) = %+v, %v, want read_seq 1 (last_seq at join)", m, err)
	}
	if got := list(v); len(got) != 1 || got[0].Unread != 0 {
		t.Errorf("Rooms(new member) = %+v, want r1 with 0 unread", got)
	}
	MustSend(t, s, r1, v, "one")
	m3 := MustSend(t, s, r1, v, "two")
	unread := func(user parley.User, title string) int64 {
		t.Helper()
		for _, e := range list(user) {
			if e.Room.Title == title {
				return e.Unread
			}
		}
		t.Fatalf("Rooms(%s) has no %s", user.Name, title)
		return 0
	}
	if got := unread(u, "r1"); got != 2 {
		t.Errorf("unread(u, r1) = %d, want 2", got)
	}
	if got := unread(v, "r1"); got != 0 {
		t.Errorf("unread(v, r1) = %d, want 0 (own messages)", got)
	}
	if e := list(u)[0]; e.LastMessage == nil || e.LastMessage.ID != m3.ID {
		t.Errorf("Rooms(u)[0].LastMessage = %+v, want %+v", e.LastMessage, m3)
	}
	MustSend(t, s, r1, u, "three")
	if got := unread(u, "r1"); got != 0 {
		t.Errorf("unread(u, r1) after own send = %d, want 0", got)
	}
	if got := unread(v, "r1"); got != 1 {
		t.Errorf("unread(v, r1) = %d, want 1", got)
	}
	if _, err := s.MarkRead(ctx, r1.ID, v.ID, 4); err != nil {
		t.Fatalf("MarkRead() error = %v", err)
	}
	if got := unread(v, "r1"); got != 0 {
		t.Errorf("unread(v, r1) after MarkRead = %d, want 0", got)
	}

	MustSend(t, s, r2, u, "r2 now")
	if want := []string{"r2", "r1", "r3"}; !slices.Equal(ids(list(u)), want) {
		t.Errorf("Rooms() after a message in r2 = %v, want %v", ids(list(u)), want)
	}

	if got := list(w); len(got) != 0 {
		t.Errorf("Rooms(no rooms) = %v, want none", ids(got))
	}
	_, _, err := s.Rooms(ctx, u.ID, "not a cursor", 10)
	wantCode(t, "Rooms(malformed cursor)", err, parley.CodeInvalid)
	_ = r3
}

// testRoomListPaging: cursor paging sees every room once, in order.
func testRoomListPaging(t *testing.T, newStore NewStoreFunc) {
	const n = 23
	s := newStore(t, nil)
	u := MustCreateUser(t, s, "pager")
	rooms := make([]parley.Room, n)
	for i := range n {
		rooms[i] = MustCreateRoom(t, s, u, fmt.Sprintf("room%02d", i), 0)
	}
	// Stir: a message in every third room, out of creation order.
	for i := n - 1; i >= 0; i -= 3 {
		MustSend(t, s, rooms[i], u, "stir")
	}
	full := AllRooms(t, s, u, 100)
	if len(full) != n {
		t.Fatalf("Rooms(limit 100) = %d rooms, want %d", len(full), n)
	}
	for i := 1; i < len(full); i++ {
		if !parley.RoomNewer(full[i-1].Room, full[i].Room) {
			t.Errorf("Rooms()[%d] = %s is not newer than [%d] = %s", i-1, roomString(full[i-1].Room), i, roomString(full[i].Room))
		}
	}
	for _, limit := range []int{1, 5, 7, 22, 23} {
		paged := AllRooms(t, s, u, limit)
		if len(paged) != n {
			t.Errorf("Rooms by %d = %d rooms, want %d", limit, len(paged), n)
			continue
		}
		for i := range paged {
			if paged[i].Room.ID != full[i].Room.ID {
				t.Errorf("Rooms by %d [%d] = %s, want %s", limit, i, paged[i].Room.Title, full[i].Room.Title)
				break
			}
		}
	}
}

// testDirectRooms: one direct room per pair, whichever asks.
func testDirectRooms(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, nil)
	ctx := context.Background()
	a, b, c := MustCreateUser(t, s, "a"), MustCreateUser(t, s, "b"), MustCreateUser(t, s, "c")
	r, created, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: a.ID, PeerID: b.ID})
	if err != nil || !created || r.Kind != parley.KindDirect || r.MemberCount != 2 {
		t.Fatalf("CreateRoom(direct a-b) = %s, %v, %v, want a new direct room of 2", roomString(r), created, err)
	}
	again, created, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: b.ID, PeerID: a.ID})
	if err != nil || created || again.ID != r.ID {
		t.Errorf("CreateRoom(direct b-a) = %s, %v, %v, want %s, false", again.ID, created, err, r.ID)
	}
	members, err := s.Members(ctx, r.ID)
	slices.Sort(members)
	want := []string{a.ID, b.ID}
	slices.Sort(want)
	if err != nil || !slices.Equal(members, want) {
		t.Errorf("Members(direct) = %v, %v, want %v", members, err, want)
	}
	other, created, err := s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: a.ID, PeerID: c.ID})
	if err != nil || !created || other.ID == r.ID {
		t.Errorf("CreateRoom(direct a-c) = %s, %v, %v, want another new room", other.ID, created, err)
	}
	_, _, err = s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: a.ID, PeerID: "no-such-user"})
	wantCode(t, "CreateRoom(direct, unknown peer)", err, parley.CodeNotFound)
	_, _, err = s.Join(ctx, r.ID, c.ID)
	wantCode(t, "Join(direct)", err, parley.CodeForbidden)
	if got := AllRooms(t, s, b, 10); len(got) != 1 || got[0].Room.ID != r.ID {
		t.Errorf("Rooms(b) = %d entries, want the direct room", len(got))
	}
	_, _, err = s.CreateRoom(ctx, parley.NewRoom{Kind: "channel", CreatorID: a.ID})
	wantCode(t, "CreateRoom(unknown kind)", err, parley.CodeInvalid)
}

// testUnknownRoom: every call naming a room that does not exist fails with
// CodeNotFound.
func testUnknownRoom(t *testing.T, newStore NewStoreFunc) {
	s := newStore(t, nil)
	ctx := context.Background()
	u := MustCreateUser(t, s, "u")
	const id = "no-such-room"
	_, err := s.Room(ctx, id)
	wantCode(t, "Room()", err, parley.CodeNotFound)
	_, _, err = s.Join(ctx, id, u.ID)
	wantCode(t, "Join()", err, parley.CodeNotFound)
	_, err = s.Leave(ctx, id, u.ID)
	wantCode(t, "Leave()", err, parley.CodeNotFound)
	_, err = s.Messages(ctx, id, parley.Newest(10))
	wantCode(t, "Messages(newest)", err, parley.CodeNotFound)
	_, err = s.Messages(ctx, id, parley.Page{After: 0, Limit: 10})
	wantCode(t, "Messages(after)", err, parley.CodeNotFound)
	_, err = s.Members(ctx, id)
	wantCode(t, "Members()", err, parley.CodeNotFound)
	_, _, err = s.Send(ctx, parley.NewMessage{RoomID: id, SenderID: u.ID, SenderName: u.Name, Body: "x"})
	wantCode(t, "Send()", err, parley.CodeNotFound)
	_, err = s.Member(ctx, id, u.ID)
	wantCode(t, "Member()", err, parley.CodeNotFound)
	_, _, err = s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindGroup, CreatorID: "no-such-user"})
	wantCode(t, "CreateRoom(unknown creator)", err, parley.CodeNotFound)
	if ms, err := s.Memberships(ctx, u.ID); err != nil || len(ms) != 0 {
		t.Errorf("Memberships(no rooms) = %v, %v, want none", ms, err)
	}
	if err := s.Ping(ctx); err != nil {
		t.Errorf("Ping() error = %v", err)
	}
}

// testMembersOnly: Send refuses a sender who never joined or has left, in
// a batch with members' sends that go through, and the room's seqs stay
// contiguous.
func testMembersOnly(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	owner := MustCreateUser(t, s, "owner")
	gone := MustCreateUser(t, s, "gone")
	never := MustCreateUser(t, s, "never")
	room := MustCreateRoom(t, s, owner, "members only", 0)
	if _, _, err := s.Join(ctx, room.ID, gone.ID); err != nil {
		t.Fatalf("Join() error = %v", err)
	}
	MustSend(t, s, room, gone, "before leaving")
	if _, err := s.Leave(ctx, room.ID, gone.ID); err != nil {
		t.Fatalf("Leave() error = %v", err)
	}
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i, u := range []parley.User{gone, never, owner} {
		wg.Go(func() {
			_, _, errs[i] = s.Send(ctx, parley.NewMessage{RoomID: room.ID, SenderID: u.ID, SenderName: u.Name, Body: "after", ClientID: "c"})
		})
	}
	wg.Wait()
	wantCode(t, "Send(left)", errs[0], parley.CodeForbidden)
	wantCode(t, "Send(never joined)", errs[1], parley.CodeForbidden)
	if errs[2] != nil {
		t.Errorf("Send(member) error = %v", errs[2])
	}
	msgs, err := s.Messages(ctx, room.ID, parley.Page{After: 0, Limit: 10})
	if err != nil || len(msgs) != 2 || msgs[0].Seq != 1 || msgs[1].Seq != 2 || msgs[1].SenderID != owner.ID {
		t.Errorf("history = %v, %v; want seqs 1 and 2, the second the owner's", msgs, err)
	}
}
