package parleytest

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"parley"
)

// peopleTests are the suite's cases of parley.PeopleStore; RunStoreTests
// runs them with the others.
var peopleTests = []struct {
	name string
	run  func(t *testing.T, newStore NewStoreFunc)
}{
	{"Roles", testRoles},
	{"WhoMayModerate", testWhoMayModerate},
	{"Bans", testBans},
	{"UpdateRoom", testUpdateRoom},
	{"PeopleEvents", testPeopleEvents},
	{"OwnerLeaves", testOwnerLeaves},
	{"CapacityRacesJoins", testCapacityRacesJoins},
	{"DemotionRacesRemoval", testDemotionRacesRemoval},
}

// people is a group room with an owner, an admin and two members, a direct
// room of the owner and peer, and an outsider.
type people struct {
	s                                          parley.Store
	owner, admin, member, member2, peer, other parley.User
	group, direct                              parley.Room
}

func newPeople(t *testing.T, s parley.Store) *people {
	t.Helper()
	ctx := context.Background()
	p := &people{s: s}
	for _, u := range []struct {
		p    *parley.User
		name string
	}{{&p.owner, "owner"}, {&p.admin, "admin"}, {&p.member, "member"}, {&p.member2, "member2"}, {&p.peer, "peer"}, {&p.other, "outsider"}} {
		*u.p = MustCreateUser(t, s, u.name)
	}
	p.group = MustCreateRoom(t, s, p.owner, "people", 0)
	for _, u := range []parley.User{p.admin, p.member, p.member2} {
		p.group = MustJoin(t, s, p.group, u)
	}
	if _, err := s.SetRole(ctx, p.group.ID, p.owner.ID, p.admin.ID, parley.RoleAdmin); err != nil {
		t.Fatalf("SetRole(admin) error = %v", err)
	}
	var err error
	if p.direct, _, err = s.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindDirect, CreatorID: p.owner.ID, PeerID: p.peer.ID}); err != nil {
		t.Fatalf("CreateRoom(direct) error = %v", err)
	}
	return p
}

// roleOf returns u's role in room id from Member ("" for none).
func roleOf(t *testing.T, s parley.Store, roomID string, u parley.User) string {
	t.Helper()
	m, err := s.Member(context.Background(), roomID, u.ID)
	if parley.ErrorCode(err) == parley.CodeNotFound {
		return ""
	}
	if err != nil {
		t.Fatalf("Member(%s) error = %v", u.Name, err)
	}
	return m.Role
}

// listing returns the room's members by user id.
func listing(t *testing.T, s parley.Store, roomID string) map[string]parley.RoomMember {
	t.Helper()
	ms, err := s.RoomMembers(context.Background(), roomID)
	if err != nil {
		t.Fatalf("RoomMembers(%s) error = %v", roomID, err)
	}
	out := map[string]parley.RoomMember{}
	for _, m := range ms {
		if _, dup := out[m.UserID]; dup {
			t.Errorf("RoomMembers(%s) lists %s twice", roomID, m.UserID)
		}
		out[m.UserID] = m
	}
	return out
}

// testRoles: the creator of a group room is its owner, joiners are members,
// both members of a direct room are members; Member, Memberships and the
// listing agree, and the listing has names, joined times and read
// positions.
func testRoles(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	p := newPeople(t, s)
	MustSend(t, s, p.group, p.member, "hello")
	want := map[string]string{p.owner.ID: parley.RoleOwner, p.admin.ID: parley.RoleAdmin,
		p.member.ID: parley.RoleMember, p.member2.ID: parley.RoleMember}
	for _, u := range []parley.User{p.owner, p.admin, p.member, p.member2} {
		if got := roleOf(t, s, p.group.ID, u); got != want[u.ID] {
			t.Errorf("Member(%s).Role = %q, want %q", u.Name, got, want[u.ID])
		}
	}
	for _, u := range []parley.User{p.owner, p.peer} {
		if got := roleOf(t, s, p.direct.ID, u); got != parley.RoleMember {
			t.Errorf("Member(direct, %s).Role = %q, want member", u.Name, got)
		}
	}
	ms, err := s.Memberships(ctx, p.owner.ID)
	if err != nil || len(ms) != 2 {
		t.Fatalf("Memberships(owner) = %v, %v, want 2", ms, err)
	}
	for _, m := range ms {
		if w := map[string]string{p.group.ID: parley.RoleOwner, p.direct.ID: parley.RoleMember}[m.RoomID]; m.Role != w {
			t.Errorf("Memberships(owner) %s role %q, want %q", m.RoomID, m.Role, w)
		}
	}

	list := listing(t, s, p.group.ID)
	if len(list) != 4 {
		t.Fatalf("RoomMembers() = %d members, want 4", len(list))
	}
	for _, u := range []parley.User{p.owner, p.admin, p.member, p.member2} {
		m, ok := list[u.ID]
		if !ok {
			t.Errorf("RoomMembers() lacks %s", u.Name)
			continue
		}
		one, err := s.Member(ctx, p.group.ID, u.ID)
		if err != nil {
			t.Fatalf("Member(%s) error = %v", u.Name, err)
		}
		if m.Name != u.Name || m.Role != want[u.ID] || m.RoomID != p.group.ID || m.ReadSeq != one.ReadSeq ||
			!m.JoinedAt.Equal(one.JoinedAt) || m.JoinedAt.IsZero() {
			t.Errorf("RoomMembers() %s = %+v, want name %s role %s and Member's %+v", u.Name, m, u.Name, want[u.ID], one)
		}
	}
	if m := list[p.member.ID]; m.ReadSeq != 1 {
		t.Errorf("RoomMembers() sender's read_seq = %d, want 1", m.ReadSeq)
	}
	// The listing follows reads, leaves and joins.
	if _, err := s.MarkRead(ctx, p.group.ID, p.owner.ID, 1); err != nil {
		t.Fatalf("MarkRead() error = %v", err)
	}
	if _, err := s.Leave(ctx, p.group.ID, p.member2.ID); err != nil {
		t.Fatalf("Leave() error = %v", err)
	}
	MustJoin(t, s, p.group, p.other)
	list = listing(t, s, p.group.ID)
	if _, ok := list[p.member2.ID]; ok || len(list) != 4 || list[p.owner.ID].ReadSeq != 1 ||
		list[p.other.ID].Role != parley.RoleMember || list[p.other.ID].Name != p.other.Name || list[p.other.ID].ReadSeq != 1 {
		t.Errorf("RoomMembers() after read, leave, join = %+v", list)
	}
	if d := listing(t, s, p.direct.ID); len(d) != 2 || d[p.peer.ID].Role != parley.RoleMember {
		t.Errorf("RoomMembers(direct) = %+v, want two members", d)
	}
	_, err = s.RoomMembers(ctx, "no-such-room")
	wantCode(t, "RoomMembers(unknown room)", err, parley.CodeNotFound)
	_, err = s.Bans(ctx, "no-such-room")
	wantCode(t, "Bans(unknown room)", err, parley.CodeNotFound)
}

// testWhoMayModerate runs each moderation write as each kind of actor, on a
// fresh world each, and checks the outcome.
func testWhoMayModerate(t *testing.T, newStore NewStoreFunc) {
	const ok, forbidden, notFound, invalid = "", parley.CodeForbidden, parley.CodeNotFound, parley.CodeInvalid
	title := "renamed"
	type actor int
	const (
		owner actor = iota
		admin
		member
		outsider
		peer // the direct room's peer, on the direct room
		numActors
	)
	names := [numActors]string{"owner", "admin", "member", "outsider", "direct peer"}
	ops := []struct {
		name string
		do   func(p *people, a parley.User, room string) error
		want [numActors]string
	}{
		{"UpdateRoom", func(p *people, a parley.User, room string) error {
			_, err := p.s.UpdateRoom(context.Background(), room, a.ID, parley.RoomUpdate{Title: &title})
			return err
		}, [numActors]string{ok, ok, forbidden, forbidden, forbidden}},
		{"SetRole(member2 admin)", func(p *people, a parley.User, room string) error {
			target := p.member2
			if room == p.direct.ID {
				target = p.owner
			}
			_, err := p.s.SetRole(context.Background(), room, a.ID, target.ID, parley.RoleAdmin)
			return err
		}, [numActors]string{ok, forbidden, forbidden, forbidden, forbidden}},
		{"SetRole(owner member)", func(p *people, a parley.User, room string) error {
			_, err := p.s.SetRole(context.Background(), room, a.ID, p.owner.ID, parley.RoleMember)
			return err
		}, [numActors]string{forbidden, forbidden, forbidden, forbidden, forbidden}},
		{"RemoveMember(member2)", func(p *people, a parley.User, room string) error {
			target := p.member2
			if room == p.direct.ID {
				target = p.owner
			}
			_, err := p.s.RemoveMember(context.Background(), room, a.ID, target.ID, false)
			return err
		}, [numActors]string{ok, ok, forbidden, forbidden, forbidden}},
		{"RemoveMember(admin)", func(p *people, a parley.User, room string) error {
			target := p.admin
			if room == p.direct.ID {
				target = p.owner
			}
			_, err := p.s.RemoveMember(context.Background(), room, a.ID, target.ID, true)
			return err
		}, [numActors]string{ok, invalid, forbidden, forbidden, forbidden}},
		{"RemoveMember(owner)", func(p *people, a parley.User, room string) error {
			_, err := p.s.RemoveMember(context.Background(), room, a.ID, p.owner.ID, false)
			return err
		}, [numActors]string{invalid, forbidden, forbidden, forbidden, forbidden}},
		{"Unban", func(p *people, a parley.User, room string) error {
			return p.s.Unban(context.Background(), room, a.ID, p.other.ID)
		}, [numActors]string{ok, ok, forbidden, forbidden, forbidden}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			for a := range numActors {
				p := newPeople(t, newStore(t, nil))
				users := [numActors]parley.User{p.owner, p.admin, p.member, p.other, p.peer}
				room := p.group.ID
				if a == peer {
					room = p.direct.ID
				}
				err := op.do(p, users[a], room)
				if got := parley.ErrorCode(err); got != op.want[a] {
					t.Errorf("%s by %s: %v, want code %q", op.name, names[a], err, op.want[a])
				}
			}
		})
	}
	// The role checks of the table above, as the table's store sees them
	// afterwards: a refused write changed nothing.
	p := newPeople(t, newStore(t, nil))
	ctx := context.Background()
	if _, err := p.s.RemoveMember(ctx, p.group.ID, p.admin.ID, p.admin.ID, false); parley.ErrorCode(err) != invalid {
		t.Errorf("RemoveMember(self) = %v, want invalid", err)
	}
	if _, err := p.s.SetRole(ctx, p.group.ID, p.owner.ID, p.member.ID, parley.RoleOwner); parley.ErrorCode(err) != invalid {
		t.Errorf("SetRole(owner) = %v, want invalid", err)
	}
	if _, err := p.s.SetRole(ctx, p.group.ID, p.owner.ID, p.other.ID, parley.RoleAdmin); parley.ErrorCode(err) != notFound {
		t.Errorf("SetRole(outsider) = %v, want not_found", err)
	}
	if _, err := p.s.RemoveMember(ctx, p.group.ID, p.owner.ID, p.other.ID, false); parley.ErrorCode(err) != notFound {
		t.Errorf("RemoveMember(outsider, no ban) = %v, want not_found", err)
	}
	if _, err := p.s.RemoveMember(ctx, "no-such-room", p.owner.ID, p.member.ID, false); parley.ErrorCode(err) != notFound {
		t.Errorf("RemoveMember(unknown room) = %v, want not_found", err)
	}
	if roleOf(t, p.s, p.group.ID, p.admin) != parley.RoleAdmin || roleOf(t, p.s, p.group.ID, p.owner) != parley.RoleOwner ||
		roleOf(t, p.s, p.group.ID, p.member) != parley.RoleMember {
		t.Errorf("roles changed by refused writes")
	}
}

// testBans: a banned member is removed and cannot join again until unbanned;
// a non-member can be banned ahead; the list names them.
func testBans(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	p := newPeople(t, s)
	r, err := s.RemoveMember(ctx, p.group.ID, p.admin.ID, p.member.ID, true)
	if err != nil || r.MemberCount != 3 {
		t.Fatalf("RemoveMember(ban) = %s, %v, want 3 members", roomString(r), err)
	}
	if roleOf(t, s, p.group.ID, p.member) != "" {
		t.Errorf("banned member is still a member")
	}
	_, _, err = s.Join(ctx, p.group.ID, p.member.ID)
	wantCode(t, "Join(banned)", err, parley.CodeForbidden)
	// Ahead of a join.
	if _, err := s.RemoveMember(ctx, p.group.ID, p.owner.ID, p.other.ID, true); err != nil {
		t.Fatalf("RemoveMember(ban a non-member) error = %v", err)
	}
	_, _, err = s.Join(ctx, p.group.ID, p.other.ID)
	wantCode(t, "Join(banned ahead)", err, parley.CodeForbidden)
	_, err = s.RemoveMember(ctx, p.group.ID, p.owner.ID, "no-such-user", true)
	wantCode(t, "RemoveMember(ban an unknown user)", err, parley.CodeNotFound)

	bans, err := s.Bans(ctx, p.group.ID)
	if err != nil || len(bans) != 2 {
		t.Fatalf("Bans() = %+v, %v, want 2", bans, err)
	}
	if b := bans[0]; b.UserID != p.other.ID || b.Name != p.other.Name || b.ActorID != p.owner.ID || b.RoomID != p.group.ID {
		t.Errorf("Bans()[0] = %+v, want the outsider banned by the owner (newest first)", b)
	}
	if b := bans[1]; b.UserID != p.member.ID || b.ActorID != p.admin.ID || b.BannedAt.After(bans[0].BannedAt) {
		t.Errorf("Bans()[1] = %+v, want the member banned by the admin, before", b)
	}
	if bs, err := s.Bans(ctx, p.direct.ID); err != nil || len(bs) != 0 {
		t.Errorf("Bans(direct) = %v, %v, want none", bs, err)
	}

	if err := s.Unban(ctx, p.group.ID, p.admin.ID, p.member.ID); err != nil {
		t.Fatalf("Unban() error = %v", err)
	}
	if err := s.Unban(ctx, p.group.ID, p.admin.ID, p.member.ID); err != nil {
		t.Errorf("Unban(again) error = %v", err)
	}
	if _, ok, err := s.Join(ctx, p.group.ID, p.member.ID); err != nil || !ok {
		t.Errorf("Join(unbanned) = %v, %v, want joined", ok, err)
	}
	if roleOf(t, s, p.group.ID, p.member) != parley.RoleMember {
		t.Errorf("rejoined member's role = %q, want member", roleOf(t, s, p.group.ID, p.member))
	}
	if bans, err := s.Bans(ctx, p.group.ID); err != nil || len(bans) != 1 || bans[0].UserID != p.other.ID {
		t.Errorf("Bans() after unban = %+v, %v, want the outsider only", bans, err)
	}
	// A removal without a ban lets the member back.
	if _, err := s.RemoveMember(ctx, p.group.ID, p.owner.ID, p.member2.ID, false); err != nil {
		t.Fatalf("RemoveMember() error = %v", err)
	}
	if _, ok, err := s.Join(ctx, p.group.ID, p.member2.ID); err != nil || !ok {
		t.Errorf("Join(removed, not banned) = %v, %v, want joined", ok, err)
	}
}

// testUpdateRoom: title and capacity change; capacity never goes below the
// members; 0 stays unlimited.
func testUpdateRoom(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	s := newStore(t, nil)
	p := newPeople(t, s)
	title, four, three, zero, neg, empty := "new title", 4, 3, 0, -1, ""
	AllRooms(t, s, p.member, 10) // a cached room list, if the store keeps one
	MustRoom(t, s, p.group.ID)
	r, err := s.UpdateRoom(ctx, p.group.ID, p.owner.ID, parley.RoomUpdate{Title: &title, Capacity: &four})
	if err != nil || r.Title != title || r.Capacity != 4 || r.MemberCount != 4 || !r.Full() {
		t.Fatalf("UpdateRoom(title, 4) = %+v, %v", r, err)
	}
	if got := MustRoom(t, s, p.group.ID); !sameRoom(got, r) {
		t.Errorf("Room() = %+v, want %+v", got, r)
	}
	for _, e := range AllRooms(t, s, p.member, 10) {
		if e.Room.ID == p.group.ID && (e.Room.Title != title || e.Room.Capacity != 4) {
			t.Errorf("Rooms(member) entry = %+v, want the new title and capacity", e.Room)
		}
	}
	_, _, err = s.Join(ctx, p.group.ID, p.other.ID)
	wantCode(t, "Join(full after update)", err, parley.CodeRoomFull)
	_, err = s.UpdateRoom(ctx, p.group.ID, p.admin.ID, parley.RoomUpdate{Capacity: &three})
	wantCode(t, "UpdateRoom(capacity below members)", err, parley.CodeConflict)
	_, err = s.UpdateRoom(ctx, p.group.ID, p.admin.ID, parley.RoomUpdate{Capacity: &neg})
	wantCode(t, "UpdateRoom(negative)", err, parley.CodeInvalid)
	_, err = s.UpdateRoom(ctx, p.group.ID, p.admin.ID, parley.RoomUpdate{Title: &empty})
	wantCode(t, "UpdateRoom(empty title)", err, parley.CodeInvalid)
	_, err = s.UpdateRoom(ctx, p.group.ID, p.admin.ID, parley.RoomUpdate{})
	wantCode(t, "UpdateRoom(nothing)", err, parley.CodeInvalid)
	if r, err = s.UpdateRoom(ctx, p.group.ID, p.admin.ID, parley.RoomUpdate{Capacity: &zero}); err != nil || r.Capacity != 0 || r.Title != title {
		t.Errorf("UpdateRoom(0) = %+v, %v, want unlimited, title kept", r, err)
	}
	MustJoin(t, s, p.group, p.other)
	_, err = s.UpdateRoom(ctx, "no-such-room", p.owner.ID, parley.RoomUpdate{Title: &title})
	wantCode(t, "UpdateRoom(unknown room)", err, parley.CodeNotFound)

	// A retention of the room's own: an owner's or admin's, bounded, seen
	// by Room and the room list, and 0 again for the server's default.
	day, tooLong, negative, serverDefault := int64(86400), int64(parley.MaxRetentionSeconds+1), int64(-1), int64(0)
	r, err = s.UpdateRoom(ctx, p.group.ID, p.admin.ID, parley.RoomUpdate{RetentionSeconds: &day})
	if err != nil || r.RetentionSeconds != day || r.Title != title {
		t.Errorf("UpdateRoom(retention a day) = %+v, %v, want retention %d, title kept", r, err, day)
	}
	if got := MustRoom(t, s, p.group.ID); got.RetentionSeconds != day {
		t.Errorf("Room() after UpdateRoom(retention) = %+v, want retention %d", got, day)
	}
	for _, e := range AllRooms(t, s, p.member, 10) {
		if e.Room.ID == p.group.ID && e.Room.RetentionSeconds != day {
			t.Errorf("Rooms(member) entry = %+v, want retention %d", e.Room, day)
		}
	}
	_, err = s.UpdateRoom(ctx, p.group.ID, p.member.ID, parley.RoomUpdate{RetentionSeconds: &serverDefault})
	wantCode(t, "UpdateRoom(retention, as a member)", err, parley.CodeForbidden)
	_, err = s.UpdateRoom(ctx, p.group.ID, p.owner.ID, parley.RoomUpdate{RetentionSeconds: &negative})
	wantCode(t, "UpdateRoom(negative retention)", err, parley.CodeInvalid)
	_, err = s.UpdateRoom(ctx, p.group.ID, p.owner.ID, parley.RoomUpdate{RetentionSeconds: &tooLong})
	wantCode(t, "UpdateRoom(retention over the bound)", err, parley.CodeInvalid)
	if r, err = s.UpdateRoom(ctx, p.group.ID, p.owner.ID, parley.RoomUpdate{RetentionSeconds: &serverDefault}); err != nil || r.RetentionSeconds != 0 {
		t.Errorf("UpdateRoom(retention 0) = %+v, %v, want the server's default", r, err)
	}
	if got := MustRoom(t, s, p.group.ID); got.RetentionSeconds != 0 {
		t.Errorf("Room() after UpdateRoom(retention 0) = %+v, want retention 0", got)
	}
}

// testPeopleEvents: each people write reports its change once, with the
// actor, in order; a write that changes nothing reports nothing.
func testPeopleEvents(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	u, a, m := MustCreateUser(t, s, "u"), MustCreateUser(t, s, "a"), MustCreateUser(t, s, "m")
	mark := 0
	next := func(step string, n int) []parley.Event {
		t.Helper()
		got := rec.Events()[mark:]
		mark += len(got)
		if len(got) != n {
			var kinds []string
			for _, e := range got {
				kinds = append(kinds, kindName(e.Kind)+" "+e.UserID)
			}
			t.Fatalf("%s: %d events %v, want %d", step, len(got), kinds, n)
		}
		return got
	}
	room := MustCreateRoom(t, s, u, "events", 0)
	if evs := next("CreateRoom", 2); evs[1].Kind != parley.EventJoin || evs[1].Role != parley.RoleOwner {
		t.Errorf("creator's join = %s role %q, want join as owner", kindName(evs[1].Kind), evs[1].Role)
	}
	room = MustJoin(t, s, room, a)
	if evs := next("Join", 1); evs[0].Role != parley.RoleMember {
		t.Errorf("join role = %q, want member", evs[0].Role)
	}
	room = MustJoin(t, s, room, m)
	next("Join(m)", 1)

	if _, err := s.SetRole(ctx, room.ID, u.ID, a.ID, parley.RoleAdmin); err != nil {
		t.Fatalf("SetRole() error = %v", err)
	}
	if e := next("SetRole", 1)[0]; e.Kind != parley.EventRole || e.UserID != a.ID || e.Role != parley.RoleAdmin ||
		e.ActorID != u.ID || !sameRoom(e.Room, room) {
		t.Errorf("SetRole event = %+v", e)
	}
	s.SetRole(ctx, room.ID, u.ID, a.ID, parley.RoleAdmin)
	next("SetRole(same)", 0)

	title := "renamed"
	after, err := s.UpdateRoom(ctx, room.ID, a.ID, parley.RoomUpdate{Title: &title})
	if err != nil {
		t.Fatalf("UpdateRoom() error = %v", err)
	}
	if e := next("UpdateRoom", 1)[0]; e.Kind != parley.EventRoomInfo || e.ActorID != a.ID || e.Room.Title != title || !sameRoom(e.Room, after) {
		t.Errorf("UpdateRoom event = %+v", e)
	}
	s.UpdateRoom(ctx, room.ID, a.ID, parley.RoomUpdate{Title: &title})
	next("UpdateRoom(same)", 0)
	one := 1
	s.UpdateRoom(ctx, room.ID, a.ID, parley.RoomUpdate{Capacity: &one})
	next("UpdateRoom(conflict)", 0)

	after, err = s.RemoveMember(ctx, room.ID, a.ID, m.ID, true)
	if err != nil {
		t.Fatalf("RemoveMember() error = %v", err)
	}
	if e := next("RemoveMember(ban)", 1)[0]; e.Kind != parley.EventLeave || e.UserID != m.ID || e.Reason != parley.LeaveBanned ||
		e.ActorID != a.ID || !sameRoom(e.Room, after) || after.MemberCount != 2 {
		t.Errorf("ban event = %+v", e)
	}
	if err := s.Unban(ctx, room.ID, a.ID, m.ID); err != nil {
		t.Fatalf("Unban() error = %v", err)
	}
	if e := next("Unban", 1)[0]; e.Kind != parley.EventUnban || e.UserID != m.ID || e.ActorID != a.ID || !sameRoom(e.Room, after) {
		t.Errorf("unban event = %+v, want %s's ban lifted by %s with the room as it stands", e, m.ID, a.ID)
	}
	s.Unban(ctx, room.ID, a.ID, m.ID)
	next("Unban(not banned)", 0)
	room = MustJoin(t, s, after, m)
	next("Join(again)", 1)
	after, _ = s.RemoveMember(ctx, room.ID, u.ID, m.ID, false)
	if e := next("RemoveMember", 1)[0]; e.Reason != parley.LeaveRemoved || e.ActorID != u.ID || !sameRoom(e.Room, after) {
		t.Errorf("removal event = %+v", e)
	}
	s.RemoveMember(ctx, room.ID, u.ID, m.ID, true) // a ban of a non-member
	next("RemoveMember(ban a non-member)", 0)
	if _, err := s.Leave(ctx, room.ID, a.ID); err != nil {
		t.Fatalf("Leave() error = %v", err)
	}
	if e := next("Leave", 1)[0]; e.Reason != parley.LeaveLeft || e.ActorID != "" {
		t.Errorf("leave event = %+v, want no reason, no actor", e)
	}
}

// testOwnerLeaves: an owner's leave makes the longest-standing admin the
// owner, else the longest-standing member, with an EventRole after the
// leave.
func testOwnerLeaves(t *testing.T, newStore NewStoreFunc) {
	ctx := context.Background()
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	p := newPeople(t, s)
	if _, err := s.SetRole(ctx, p.group.ID, p.owner.ID, p.member2.ID, parley.RoleAdmin); err != nil {
		t.Fatalf("SetRole() error = %v", err)
	}
	mark := rec.Len()
	if _, err := s.Leave(ctx, p.group.ID, p.owner.ID); err != nil {
		t.Fatalf("Leave(owner) error = %v", err)
	}
	evs := rec.Events()[mark:]
	if len(evs) != 2 || evs[0].Kind != parley.EventLeave || evs[0].UserID != p.owner.ID ||
		evs[1].Kind != parley.EventRole || evs[1].UserID != p.admin.ID || evs[1].Role != parley.RoleOwner || evs[1].ActorID != "" {
		t.Fatalf("Leave(owner) events = %+v, want leave, then the admin's role owner", evs)
	}
	if roleOf(t, s, p.group.ID, p.admin) != parley.RoleOwner || roleOf(t, s, p.group.ID, p.member2) != parley.RoleAdmin {
		t.Errorf("after the owner left: admin %q, member2 %q, want owner, admin", roleOf(t, s, p.group.ID, p.admin), roleOf(t, s, p.group.ID, p.member2))
	}
	if l := listing(t, s, p.group.ID); l[p.admin.ID].Role != parley.RoleOwner {
		t.Errorf("RoomMembers() admin role = %q, want owner", l[p.admin.ID].Role)
	}
	// No admin left: the longest-standing member.
	if _, err := s.SetRole(ctx, p.group.ID, p.admin.ID, p.member2.ID, parley.RoleMember); err != nil {
		t.Fatalf("SetRole() error = %v", err)
	}
	if _, err := s.Leave(ctx, p.group.ID, p.admin.ID); err != nil {
		t.Fatalf("Leave(new owner) error = %v", err)
	}
	if roleOf(t, s, p.group.ID, p.member) != parley.RoleOwner {
		t.Errorf("member's role = %q, want owner (joined before member2)", roleOf(t, s, p.group.ID, p.member))
	}
	// The one left leaves: nobody owns the room; who joins next is a member.
	s.Leave(ctx, p.group.ID, p.member2.ID)
	s.Leave(ctx, p.group.ID, p.member.ID)
	MustJoin(t, s, p.group, p.other)
	if roleOf(t, s, p.group.ID, p.other) != parley.RoleMember {
		t.Errorf("joiner of an empty room: role %q, want member", roleOf(t, s, p.group.ID, p.other))
	}
	// The owner who left and joins again is a member.
	MustJoin(t, s, p.group, p.owner)
	if roleOf(t, s, p.group.ID, p.owner) != parley.RoleMember {
		t.Errorf("former owner back: role %q, want member", roleOf(t, s, p.group.ID, p.owner))
	}
}

// testCapacityRacesJoins: joins racing a capacity decrease never take the
// room past its capacity, and the listing agrees with member_count.
func testCapacityRacesJoins(t *testing.T, newStore NewStoreFunc) {
	const n, seats = 200, 60
	ctx := context.Background()
	s := newStore(t, nil)
	owner := MustCreateUser(t, s, "owner")
	room := MustCreateRoom(t, s, owner, "race", 0)
	users := MustCreateUsers(t, s, "racer", n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	set := false // the capacity change committed
	capacity := seats
	for i, u := range users {
		wg.Go(func() {
			r, _, err := s.Join(ctx, room.ID, u.ID)
			switch {
			case err == nil && r.Capacity > 0 && r.MemberCount > r.Capacity:
				t.Errorf("Join() = %s, over capacity %d", roomString(r), r.Capacity)
			case err != nil && parley.ErrorCode(err) != parley.CodeRoomFull:
				t.Errorf("Join(%s) error = %v", u.Name, err)
			}
		})
		if i == n/4 {
			wg.Go(func() {
				// Until it commits or the room has more members than it.
				for range 1000 {
					_, err := s.UpdateRoom(ctx, room.ID, owner.ID, parley.RoomUpdate{Capacity: &capacity})
					if err == nil {
						mu.Lock()
						set = true
						mu.Unlock()
						return
					}
					if parley.ErrorCode(err) != parley.CodeConflict {
						t.Errorf("UpdateRoom() error = %v", err)
						return
					}
					if r := MustRoom(t, s, room.ID); r.MemberCount > seats {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	after := MustRoom(t, s, room.ID)
	if set && (after.Capacity != seats || after.MemberCount > seats) {
		t.Errorf("room after the race = %s capacity %d, want at most %d members", roomString(after), after.Capacity, seats)
	}
	if !set && after.MemberCount <= seats {
		t.Errorf("capacity change refused, but the room has %d members, at most %d", after.MemberCount, seats)
	}
	if l := listing(t, s, room.ID); len(l) != after.MemberCount {
		t.Errorf("RoomMembers() = %d, member_count %d", len(l), after.MemberCount)
	}
}

// testDemotionRacesRemoval: an admin's removal racing the owner's demotion
// of that admin either commits first (its event comes before the role
// event) or is refused; never both.
func testDemotionRacesRemoval(t *testing.T, newStore NewStoreFunc) {
	const rounds = 20
	ctx := context.Background()
	rec := &Recorder{}
	s := newStore(t, rec.Sink)
	owner, admin := MustCreateUser(t, s, "owner"), MustCreateUser(t, s, "admin")
	targets := MustCreateUsers(t, s, "target", rounds)
	for i := range rounds {
		room := MustCreateRoom(t, s, owner, fmt.Sprint("race", i), 0)
		MustJoin(t, s, room, admin)
		MustJoin(t, s, room, targets[i])
		if _, err := s.SetRole(ctx, room.ID, owner.ID, admin.ID, parley.RoleAdmin); err != nil {
			t.Fatalf("SetRole() error = %v", err)
		}
		mark := rec.Len()
		var removeErr, demoteErr error
		var wg sync.WaitGroup
		wg.Go(func() { _, removeErr = s.RemoveMember(ctx, room.ID, admin.ID, targets[i].ID, false) })
		wg.Go(func() { _, demoteErr = s.SetRole(ctx, room.ID, owner.ID, admin.ID, parley.RoleMember) })
		wg.Wait()
		if demoteErr != nil {
			t.Fatalf("SetRole(demote) error = %v", demoteErr)
		}
		leaveAt, roleAt := -1, -1
		for j, e := range rec.Events()[mark:] {
			switch {
			case e.Kind == parley.EventLeave && e.UserID == targets[i].ID:
				leaveAt = j
			case e.Kind == parley.EventRole && e.UserID == admin.ID:
				roleAt = j
			}
		}
		switch {
		case removeErr == nil && (leaveAt < 0 || leaveAt > roleAt):
			t.Errorf("round %d: removal succeeded, leave event at %d, demotion at %d: want the leave first", i, leaveAt, roleAt)
		case removeErr != nil && (parley.ErrorCode(removeErr) != parley.CodeForbidden || leaveAt >= 0):
			t.Errorf("round %d: removal %v, leave event at %d: want forbidden and no leave", i, removeErr, leaveAt)
		case removeErr != nil && roleOf(t, s, room.ID, targets[i]) != parley.RoleMember:
			t.Errorf("round %d: refused removal removed the target", i)
		}
	}
}
