package redis_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"parley"
	"parley/parleytest"
)

func sortedMembers(ms []parley.RoomMember) []parley.RoomMember {
	out := slices.Clone(ms)
	slices.SortFunc(out, func(a, b parley.RoomMember) int { return strings.Compare(a.UserID, b.UserID) })
	return out
}

// TestHotRoomMembers: the member listing of either node follows every
// kind of change made on the other (join, message, read, role, removal,
// leave, room info), and once warm the listings, room info and Member's
// role reach PostgreSQL on neither node while messages and reads flow.
func TestHotRoomMembers(t *testing.T) {
	ctx := context.Background()
	a, b := twoNodes(t)
	users := parleytest.MustCreateUsers(t, a.hot, "p", 4)
	owner := users[0]
	room := parleytest.MustCreateRoom(t, a.hot, owner, "people", 0)
	check := func(step string) {
		t.Helper()
		want, err := a.pg.RoomMembers(ctx, room.ID)
		if err != nil {
			t.Fatalf("%s: PostgreSQL RoomMembers() error = %v", step, err)
		}
		for i, n := range []hotNode{b, a} {
			for range 2 { // a load, then a hit
				got, err := n.hot.RoomMembers(ctx, room.ID)
				if err != nil || !reflect.DeepEqual(sortedMembers(got), sortedMembers(want)) {
					t.Errorf("%s: node %d RoomMembers() = %+v, %v; want %+v", step, i, sortedMembers(got), err, sortedMembers(want))
				}
			}
		}
	}
	check("created")
	for _, u := range users[1:] {
		parleytest.MustJoin(t, b.hot, room, u)
	}
	check("joined")
	parleytest.MustSend(t, a.hot, room, users[1], "one")
	parleytest.MustSend(t, b.hot, room, users[2], "two")
	check("sent")
	if _, err := a.hot.MarkRead(ctx, room.ID, users[3].ID, 2); err != nil {
		t.Fatal(err)
	}
	check("read")
	if _, err := a.hot.SetRole(ctx, room.ID, owner.ID, users[1].ID, parley.RoleAdmin); err != nil {
		t.Fatal(err)
	}
	check("role")
	if m, err := b.hot.Member(ctx, room.ID, users[1].ID); err != nil || m.Role != parley.RoleAdmin {
		t.Errorf("B Member(admin) = %+v, %v; want role admin", m, err)
	}
	if _, err := b.hot.RemoveMember(ctx, room.ID, users[1].ID, users[2].ID, true); err != nil {
		t.Fatal(err)
	}
	check("banned")
	title := "renamed"
	if _, err := b.hot.UpdateRoom(ctx, room.ID, users[1].ID, parley.RoomUpdate{Title: &title}); err != nil {
		t.Fatal(err)
	}
	for i, n := range []hotNode{a, b} {
		if r := parleytest.MustRoom(t, n.hot, room.ID); r.Title != title || r.MemberCount != 3 {
			t.Errorf("node %d Room() = %+v, want the new title and 3 members", i, r)
		}
	}

	// Steady state.
	reads := func() {
		for _, n := range []hotNode{a, b} {
			if _, err := n.hot.RoomMembers(ctx, room.ID); err != nil {
				t.Fatal(err)
			}
			parleytest.MustRoom(t, n.hot, room.ID)
			for _, u := range []parley.User{users[0], users[1], users[3]} {
				if m, err := n.hot.Member(ctx, room.ID, u.ID); err != nil || m.Role == "" {
					t.Fatalf("Member(%s) = %+v, %v", u.Name, m, err)
				}
			}
		}
	}
	reads()
	queries := func() uint64 { return a.pg.Queries() + b.pg.Queries() }
	for i := range 10 {
		n := []hotNode{a, b}[i%2]
		m := parleytest.MustSend(t, n.hot, room, users[3], fmt.Sprint("steady ", i))
		if _, err := n.hot.MarkRead(ctx, room.ID, owner.ID, m.Seq); err != nil {
			t.Fatal(err)
		}
		before := queries()
		reads()
		if got := queries() - before; got != 0 {
			t.Fatalf("after message %d: the reads sent %d statements to PostgreSQL, want 0", i, got)
		}
	}
	check("steady")
}
