package chat_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"parley"
	"parley/chat"
)

// peopleWorld is a group room with an owner, an admin, two members, a
// member the admin removed and a user the owner banned, a direct room of
// the owner and a peer, and an outsider.
type peopleWorld struct {
	s                                                              *chat.Service
	owner, admin, member, member2, removed, banned, peer, outsider parley.User
	group, direct                                                  parley.Room
}

func newPeopleWorld(t *testing.T, seen chat.Seen) *peopleWorld {
	t.Helper()
	w := &peopleWorld{s: chat.New(chat.Config{Store: mustOpenStore(t), KDF: cheap, Seen: seen})}
	for _, u := range []struct {
		p    *parley.User
		name string
	}{{&w.owner, "owner"}, {&w.admin, "admin"}, {&w.member, "member"}, {&w.member2, "member2"}, {&w.removed, "removed"},
		{&w.banned, "banned"}, {&w.peer, "peer"}, {&w.outsider, "outsider"}} {
		var err error
		if *u.p, err = w.s.Register(ctx, u.name, "correct horse"); err != nil {
			t.Fatalf("Register(%s) error = %v", u.name, err)
		}
	}
	var err error
	if w.group, _, err = w.s.CreateRoom(ctx, w.owner, chat.NewRoom{Kind: parley.KindGroup, Title: "g"}); err != nil {
		t.Fatalf("CreateRoom(group) error = %v", err)
	}
	for _, u := range []parley.User{w.admin, w.member, w.member2, w.removed, w.banned} {
		if _, _, err := w.s.Join(ctx, u, w.group.ID); err != nil {
			t.Fatalf("Join(%s) error = %v", u.Name, err)
		}
	}
	if _, err := w.s.SetRole(ctx, w.owner, w.group.ID, w.admin.ID, parley.RoleAdmin); err != nil {
		t.Fatalf("SetRole(admin) error = %v", err)
	}
	if err := w.s.Remove(ctx, w.admin, w.group.ID, w.removed.ID, false); err != nil {
		t.Fatalf("Remove(removed) error = %v", err)
	}
	if err := w.s.Remove(ctx, w.owner, w.group.ID, w.banned.ID, true); err != nil {
		t.Fatalf("Remove(banned, ban) error = %v", err)
	}
	if w.direct, _, err = w.s.CreateRoom(ctx, w.owner, chat.NewRoom{Kind: parley.KindDirect, Peer: w.peer.ID}); err != nil {
		t.Fatalf("CreateRoom(direct) error = %v", err)
	}
	return w
}

// TestPeopleAuthorization runs every people operation as every kind of
// caller, on a fresh world each, and checks the outcome's error code: the
// listing is for members; the owner and admins moderate, the owner alone
// sets roles; a direct room has no moderation; to everyone who is not a
// member (an outsider, a removed member, a banned user) the room reads as
// unknown, with the one not_found text.
func TestPeopleAuthorization(t *testing.T) {
	type caller int
	const (
		owner caller = iota
		admin
		member
		outsider
		peer // on the direct room
		removed
		banned
		unknownRoom
		numCallers
	)
	names := [numCallers]string{"owner", "admin", "member", "outsider", "direct peer", "removed member", "banned user", "unknown room"}
	const ok, forbidden, notFound = "", parley.CodeForbidden, parley.CodeNotFound
	title := "renamed"
	// target is member2 in the group room, the owner in the direct room.
	target := func(w *peopleWorld, room string) string {
		if room == w.direct.ID {
			return w.owner.ID
		}
		return w.member2.ID
	}
	ops := []struct {
		name string
		do   func(w *peopleWorld, u parley.User, roomID string) error
		want [numCallers]string
	}{
		{"Members", func(w *peopleWorld, u parley.User, id string) error {
			_, _, err := w.s.Members(ctx, u, id, "", 10)
			return err
		}, [numCallers]string{ok, ok, ok, notFound, ok, notFound, notFound, notFound}},
		{"UpdateRoom", func(w *peopleWorld, u parley.User, id string) error {
			_, err := w.s.UpdateRoom(ctx, u, id, chat.RoomUpdate{Title: &title})
			return err
		}, [numCallers]string{ok, ok, forbidden, notFound, forbidden, notFound, notFound, notFound}},
		{"UpdateRoom(retention)", func(w *peopleWorld, u parley.User, id string) error {
			day := int64(86400)
			_, err := w.s.UpdateRoom(ctx, u, id, chat.RoomUpdate{RetentionSeconds: &day})
			return err
		}, [numCallers]string{ok, ok, forbidden, notFound, forbidden, notFound, notFound, notFound}},
		{"SetRole", func(w *peopleWorld, u parley.User, id string) error {
			_, err := w.s.SetRole(ctx, u, id, target(w, id), parley.RoleAdmin)
			return err
		}, [numCallers]string{ok, forbidden, forbidden, notFound, forbidden, notFound, notFound, notFound}},
		{"Remove", func(w *peopleWorld, u parley.User, id string) error {
			return w.s.Remove(ctx, u, id, target(w, id), false)
		}, [numCallers]string{ok, ok, forbidden, notFound, forbidden, notFound, notFound, notFound}},
		{"Remove(ban)", func(w *peopleWorld, u parley.User, id string) error {
			return w.s.Remove(ctx, u, id, target(w, id), true)
		}, [numCallers]string{ok, ok, forbidden, notFound, forbidden, notFound, notFound, notFound}},
		{"Unban", func(w *peopleWorld, u parley.User, id string) error {
			return w.s.Unban(ctx, u, id, w.banned.ID)
		}, [numCallers]string{ok, ok, forbidden, notFound, forbidden, notFound, notFound, notFound}},
		{"Bans", func(w *peopleWorld, u parley.User, id string) error {
			_, err := w.s.Bans(ctx, u, id)
			return err
		}, [numCallers]string{ok, ok, forbidden, notFound, forbidden, notFound, notFound, notFound}},
		{"Join", func(w *peopleWorld, u parley.User, id string) error {
			_, _, err := w.s.Join(ctx, u, id)
			return err
		}, [numCallers]string{ok, ok, ok, ok, ok, ok, forbidden, notFound}},
		{"Messages", func(w *peopleWorld, u parley.User, id string) error {
			_, err := w.s.Messages(ctx, u, id, parley.Page{Limit: 10})
			return err
		}, [numCallers]string{ok, ok, ok, forbidden, ok, forbidden, forbidden, notFound}},
	}
	for _, op := range ops {
		t.Run(op.name, func(t *testing.T) {
			w := newPeopleWorld(t, nil)
			cases := [numCallers]struct {
				u    parley.User
				room string
			}{
				owner:       {w.owner, w.group.ID},
				admin:       {w.admin, w.group.ID},
				member:      {w.member, w.group.ID},
				outsider:    {w.outsider, w.group.ID},
				peer:        {w.peer, w.direct.ID},
				removed:     {w.removed, w.group.ID},
				banned:      {w.banned, w.group.ID},
				unknownRoom: {w.owner, "no-such-room"},
			}
			notFoundText := ""
			// The owner goes last: its writes (a removal, a rename) must
			// not change the world the others are checked in.
			for _, c := range []caller{admin, member, outsider, peer, removed, banned, unknownRoom, owner} {
				tc := cases[c]
				if c == owner && op.name != "Members" && op.name != "Bans" && op.name != "Join" && op.name != "Messages" {
					w = newPeopleWorld(t, nil) // the admin's write may have done it already
					tc = struct {
						u    parley.User
						room string
					}{w.owner, w.group.ID}
				}
				err := op.do(w, tc.u, tc.room)
				if got := parley.ErrorCode(err); got != op.want[c] {
					t.Errorf("%s as %s: %v, want code %q", op.name, names[c], err, op.want[c])
				}
				if op.want[c] == notFound && err != nil {
					if notFoundText == "" {
						notFoundText = err.Error()
					} else if err.Error() != notFoundText {
						t.Errorf("%s as %s: %q, want the same text as every not_found: %q", op.name, names[c], err, notFoundText)
					}
				}
			}
		})
	}
}

// fixedSeen is a presence that knows a fixed set of users.
type fixedSeen map[string]parley.Seen

func (f fixedSeen) Seen(ctx context.Context, ids []string) (map[string]parley.Seen, error) {
	out := map[string]parley.Seen{}
	for _, id := range ids {
		if s, ok := f[id]; ok {
			out[id] = s
		}
	}
	return out, nil
}

// TestMembersOrderAndPaging: online members first, then by name; pages of
// every size see each member once, in that order; the entries carry role,
// read position, joined time and presence.
func TestMembersOrderAndPaging(t *testing.T) {
	seen := fixedSeen{}
	w := newPeopleWorld(t, seen)
	lastSeen := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	seen[w.member2.ID] = parley.Seen{Online: true}
	seen[w.owner.ID] = parley.Seen{Online: true}
	seen[w.member.ID] = parley.Seen{LastSeenAt: lastSeen}
	if _, _, err := w.s.Send(ctx, w.member, w.group.ID, "hi", ""); err != nil {
		t.Fatal(err)
	}
	all, next, err := w.s.Members(ctx, w.member, w.group.ID, "", 100)
	if err != nil || next != "" {
		t.Fatalf("Members() next %q error %v", next, err)
	}
	var names []string
	for _, e := range all {
		names = append(names, e.User.Name)
	}
	if want := []string{"member2", "owner", "admin", "member"}; !slices.Equal(names, want) {
		t.Errorf("Members() = %v, want %v (online first, then by name)", names, want)
	}
	byName := map[string]chat.MemberEntry{}
	for _, e := range all {
		byName[e.User.Name] = e
	}
	if e := byName["owner"]; e.Role != parley.RoleOwner || !e.Online || !e.LastSeenAt.IsZero() || e.JoinedAt.IsZero() || e.User.ID != w.owner.ID {
		t.Errorf("owner entry = %+v", e)
	}
	if e := byName["member"]; e.Role != parley.RoleMember || e.Online || !e.LastSeenAt.Equal(lastSeen) || e.ReadSeq != 1 {
		t.Errorf("member entry = %+v, want offline, last seen %v, read_seq 1", e, lastSeen)
	}
	if e := byName["admin"]; e.Role != parley.RoleAdmin || !e.LastSeenAt.IsZero() {
		t.Errorf("admin entry = %+v, want admin, never seen", e)
	}
	for limit := 1; limit <= 4; limit++ {
		var paged []string
		cursor := ""
		for page := 0; ; page++ {
			es, next, err := w.s.Members(ctx, w.member, w.group.ID, cursor, limit)
			if err != nil || len(es) > limit || page > 10 {
				t.Fatalf("Members(limit %d, page %d) = %d, %v", limit, page, len(es), err)
			}
			for _, e := range es {
				paged = append(paged, e.User.Name)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if !slices.Equal(paged, names) {
			t.Errorf("Members by %d = %v, want %v", limit, paged, names)
		}
	}
	for _, bad := range []string{"x", "bm90IGEgY3Vyc29y", fmt.Sprint("%%%")} {
		if _, _, err := w.s.Members(ctx, w.member, w.group.ID, bad, 10); parley.ErrorCode(err) != parley.CodeInvalid {
			t.Errorf("Members(cursor %q) error = %v, want invalid", bad, err)
		}
	}
	if _, _, err := w.s.Members(ctx, w.member, w.group.ID, "", 0); parley.ErrorCode(err) != parley.CodeInvalid {
		t.Errorf("Members(limit 0) error = %v, want invalid", err)
	}
}

// TestSetRoleEntry: SetRole answers the member's entry; bad input is
// invalid.
func TestSetRoleEntry(t *testing.T) {
	w := newPeopleWorld(t, fixedSeen{})
	e, err := w.s.SetRole(context.Background(), w.owner, w.group.ID, w.member.ID, parley.RoleAdmin)
	if err != nil || e.Role != parley.RoleAdmin || e.User.Name != "member" || e.User.ID != w.member.ID || e.JoinedAt.IsZero() {
		t.Errorf("SetRole() = %+v, %v, want member's entry as admin", e, err)
	}
	if _, err := w.s.SetRole(ctx, w.owner, w.group.ID, w.member.ID, parley.RoleOwner); parley.ErrorCode(err) != parley.CodeInvalid {
		t.Errorf("SetRole(owner) error = %v, want invalid", err)
	}
	if err := w.s.Remove(ctx, w.owner, w.group.ID, w.owner.ID, false); parley.ErrorCode(err) != parley.CodeInvalid {
		t.Errorf("Remove(self) error = %v, want invalid", err)
	}
	long := string(make([]byte, 0))
	for range chat.MaxTitle + 1 {
		long += "x"
	}
	secs := func(n int64) *int64 { return &n }
	for _, up := range []chat.RoomUpdate{{}, {Title: &long}, {Title: new(string)}, {Capacity: func() *int { n := -1; return &n }()},
		{RetentionSeconds: secs(-1)}, {RetentionSeconds: secs(parley.MaxRetentionSeconds + 1)}} {
		if _, err := w.s.UpdateRoom(ctx, w.owner, w.group.ID, up); parley.ErrorCode(err) != parley.CodeInvalid {
			t.Errorf("UpdateRoom(%+v) error = %v, want invalid", up, err)
		}
	}
	two := 2
	if _, err := w.s.UpdateRoom(ctx, w.owner, w.group.ID, chat.RoomUpdate{Capacity: &two}); parley.ErrorCode(err) != parley.CodeConflict {
		t.Errorf("UpdateRoom(capacity 2 of 4) error = %v, want conflict", err)
	}
}

// TestAddMember: the owner and admins add users to a group room (a second
// add changes nothing); a plain member, a non-member and anyone in a
// direct room cannot; a banned user is a conflict until the ban is
// lifted, an unknown user not_found, a full room room_full.
func TestAddMember(t *testing.T) {
	w := newPeopleWorld(t, fixedSeen{})
	e, added, err := w.s.AddMember(ctx, w.admin, w.group.ID, w.outsider.ID)
	if err != nil || !added || e.User.ID != w.outsider.ID || e.Role != parley.RoleMember {
		t.Fatalf("AddMember(admin adds outsider) = %+v, %v, %v", e, added, err)
	}
	if _, err := w.s.Authorize(ctx, w.outsider, w.group.ID); err != nil {
		t.Errorf("the added user is not a member: %v", err)
	}
	if _, added, err := w.s.AddMember(ctx, w.owner, w.group.ID, w.outsider.ID); err != nil || added {
		t.Errorf("AddMember(again) = %v, %v, want not added, no error", added, err)
	}
	for _, tc := range []struct {
		name   string
		by     parley.User
		room   string
		target string
		want   string
	}{
		{"a plain member", w.member, w.group.ID, w.removed.ID, parley.CodeForbidden},
		{"a non-member", w.removed, w.group.ID, w.peer.ID, parley.CodeNotFound},
		{"in a direct room", w.owner, w.direct.ID, w.member.ID, parley.CodeInvalid},
		{"a banned user", w.owner, w.group.ID, w.banned.ID, parley.CodeConflict},
		{"an unknown user", w.owner, w.group.ID, parley.NewID(), parley.CodeNotFound},
		{"an unknown room", w.owner, parley.NewID(), w.member.ID, parley.CodeNotFound},
	} {
		if _, _, err := w.s.AddMember(ctx, tc.by, tc.room, tc.target); parley.ErrorCode(err) != tc.want {
			t.Errorf("%s: AddMember error = %v, want %s", tc.name, err, tc.want)
		}
	}
	if err := w.s.Unban(ctx, w.owner, w.group.ID, w.banned.ID); err != nil {
		t.Fatal(err)
	}
	if _, added, err := w.s.AddMember(ctx, w.owner, w.group.ID, w.banned.ID); err != nil || !added {
		t.Errorf("AddMember(after the ban is lifted) = %v, %v", added, err)
	}
	r, err := w.s.Room(ctx, w.owner, w.group.ID)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.s.UpdateRoom(ctx, w.owner, w.group.ID, chat.RoomUpdate{Capacity: &r.MemberCount}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.s.AddMember(ctx, w.owner, w.group.ID, w.removed.ID); parley.ErrorCode(err) != parley.CodeRoomFull {
		t.Errorf("AddMember(full room) error = %v, want room_full", err)
	}
}
