package cache_test

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"

	"parley"
	"parley/cache"
)

func (c *counting) RoomMembers(ctx context.Context, roomID string) ([]parley.RoomMember, error) {
	c.count("RoomMembers")
	return c.Store.RoomMembers(ctx, roomID)
}

func (c *counting) Bans(ctx context.Context, roomID string) ([]parley.Ban, error) {
	c.count("Bans")
	return c.Store.Bans(ctx, roomID)
}

// sortedList returns the listing sorted by user id, nil when empty.
func sortedList(ms []parley.RoomMember) []parley.RoomMember {
	if len(ms) == 0 {
		return nil
	}
	out := slices.Clone(ms)
	slices.SortFunc(out, func(a, b parley.RoomMember) int { return strings.Compare(a.UserID, b.UserID) })
	return out
}

// TestRoomMembers: the member listing agrees with the inner store after
// every kind of change (join, message, read, role, removal, leave), and a
// listing read twice with no change between reaches the inner store at
// most for the first: in steady state, never.
func TestRoomMembers(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			e := be.newEnv(t, cache.Config{})
			owner, a, b, c := e.mustUser(t, "owner"), e.mustUser(t, "a"), e.mustUser(t, "b"), e.mustUser(t, "c")
			room := e.mustRoom(t, owner, "people")
			check := func(step string) {
				t.Helper()
				want, err := e.ref.RoomMembers(ctx, room.ID)
				if err != nil {
					t.Fatalf("%s: inner RoomMembers() error = %v", step, err)
				}
				got, err := e.c.RoomMembers(ctx, room.ID)
				if err != nil || !reflect.DeepEqual(sortedList(got), sortedList(want)) {
					t.Errorf("%s: RoomMembers() = %+v, %v; want %+v", step, sortedList(got), err, sortedList(want))
				}
				e.cnt.reset()
				again, err := e.c.RoomMembers(ctx, room.ID)
				if n := e.cnt.reset(); err != nil || len(n) != 0 || !reflect.DeepEqual(sortedList(again), sortedList(want)) {
					t.Errorf("%s: second RoomMembers() = %v reads of the inner store (%v), %v; want none", step, n, err, len(again))
				}
			}
			check("created")
			for _, u := range []parley.User{a, b, c} {
				e.mustJoin(t, room, u)
			}
			check("joined")
			e.mustSend(t, room, a, "one")
			e.mustSend(t, room, b, "two")
			check("sent")
			if _, err := e.c.MarkRead(ctx, room.ID, c.ID, 2); err != nil {
				t.Fatalf("MarkRead() error = %v", err)
			}
			check("read")
			if _, err := e.c.SetRole(ctx, room.ID, owner.ID, a.ID, parley.RoleAdmin); err != nil {
				t.Fatalf("SetRole() error = %v", err)
			}
			check("role")
			if _, err := e.c.RemoveMember(ctx, room.ID, a.ID, b.ID, true); err != nil {
				t.Fatalf("RemoveMember() error = %v", err)
			}
			check("removed")
			if _, err := e.c.Leave(ctx, room.ID, c.ID); err != nil {
				t.Fatalf("Leave() error = %v", err)
			}
			check("left")
			if be.name == "sqlite" {
				if _, err := e.c.Leave(ctx, room.ID, owner.ID); err != nil { // a's the owner now
					t.Fatalf("Leave(owner) error = %v", err)
				}
				check("owner left")
			}

			// Steady state: reads and messages keep it current with no
			// read of the inner store at all.
			e.cnt.reset()
			for i := range 20 {
				e.mustSend(t, room, a, "steady")
				if _, err := e.c.RoomMembers(ctx, room.ID); err != nil {
					t.Fatalf("RoomMembers() error = %v", err)
				}
				if i == 0 {
					e.cnt.reset()
				}
			}
			if n := e.cnt.reset(); len(n) != 0 {
				t.Errorf("steady state: inner store reads %v, want none", n)
			}
			got, _ := e.c.RoomMembers(ctx, room.ID)
			want, _ := e.ref.RoomMembers(ctx, room.ID)
			if !reflect.DeepEqual(sortedList(got), sortedList(want)) {
				t.Errorf("after steady sends: RoomMembers() = %+v, want %+v", got, want)
			}
		})
	}
}
