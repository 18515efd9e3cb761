package postgres_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"

	"parley"
	"parley/parleytest"
)

// TestMultiNodeCapacityRace: joins on both nodes race a capacity decrease
// and an admin's removals race the admin's demotion on the other node:
// the room never has more members than its capacity, and no removal by
// the admin commits after the demotion.
func TestMultiNodeCapacityRace(t *testing.T) {
	const n, seats = 300, 80
	nodes, recs := twoNodes(t)
	ctx := context.Background()
	owner := parleytest.MustCreateUser(t, nodes[0], "owner")
	room := parleytest.MustCreateRoom(t, nodes[0], owner, "race", 0)
	users := parleytest.MustCreateUsers(t, nodes[1], "racer", n)
	var set atomic.Bool
	capacity := seats
	var wg sync.WaitGroup
	for i, u := range users {
		wg.Go(func() {
			r, _, err := nodes[i%2].Join(ctx, room.ID, u.ID)
			switch {
			case err == nil && r.Capacity > 0 && r.MemberCount > r.Capacity:
				t.Errorf("Join() = %d members of %d", r.MemberCount, r.Capacity)
			case err != nil && parley.ErrorCode(err) != parley.CodeRoomFull:
				t.Errorf("Join(%s) error = %v", u.Name, err)
			}
		})
		if i == n/5 {
			wg.Go(func() {
				for range 1000 {
					_, err := nodes[1-i%2].UpdateRoom(ctx, room.ID, owner.ID, parley.RoomUpdate{Capacity: &capacity})
					if err == nil {
						set.Store(true)
						return
					}
					if parley.ErrorCode(err) != parley.CodeConflict {
						t.Errorf("UpdateRoom() error = %v", err)
						return
					}
					if r := parleytest.MustRoom(t, nodes[0], room.ID); r.MemberCount > seats {
						return
					}
				}
			})
		}
	}
	wg.Wait()
	after := parleytest.MustRoom(t, nodes[0], room.ID)
	ms, err := nodes[1].RoomMembers(ctx, room.ID)
	if err != nil || len(ms) != after.MemberCount {
		t.Errorf("RoomMembers() = %d, %v; member_count %d", len(ms), err, after.MemberCount)
	}
	if set.Load() && (after.Capacity != seats || after.MemberCount > seats) {
		t.Errorf("after the race: %d members, capacity %d, want at most %d", after.MemberCount, after.Capacity, seats)
	}
	if !set.Load() && after.MemberCount <= seats {
		t.Errorf("the capacity change never committed, but only %d members", after.MemberCount)
	}

	// The owner on node 0 demotes an admin who removes members on node 1.
	admin := ms[len(ms)-1].UserID
	if admin == owner.ID {
		admin = ms[0].UserID
	}
	if _, err := nodes[0].SetRole(ctx, room.ID, owner.ID, admin, parley.RoleAdmin); err != nil {
		t.Fatalf("SetRole(admin) error = %v", err)
	}
	var targets []string
	for _, m := range ms {
		if m.UserID != owner.ID && m.UserID != admin && len(targets) < 20 {
			targets = append(targets, m.UserID)
		}
	}
	for _, tg := range targets {
		wg.Go(func() {
			if _, err := nodes[1].RemoveMember(ctx, room.ID, admin, tg, false); err != nil && parley.ErrorCode(err) != parley.CodeForbidden {
				t.Errorf("RemoveMember() error = %v", err)
			}
		})
	}
	wg.Go(func() {
		if _, err := nodes[0].SetRole(ctx, room.ID, owner.ID, admin, parley.RoleMember); err != nil {
			t.Errorf("SetRole(demote) error = %v", err)
		}
	})
	wg.Wait()
	// Node 0 committed the demotion; every removal by the admin that
	// committed did so before it, so node 1's room after each removal
	// has more members than node 0's room at the demotion. The member
	// counts order the commits of one room.
	demotedAt := -1
	for _, e := range recs[0].Events() {
		if e.Kind == parley.EventRole && e.UserID == admin && e.Role == parley.RoleMember {
			demotedAt = e.Room.MemberCount
		}
	}
	if demotedAt < 0 {
		t.Fatal("no demotion event")
	}
	for _, e := range recs[1].Events() {
		if e.Kind == parley.EventLeave && e.ActorID == admin && e.Room.MemberCount < demotedAt {
			t.Errorf("a removal by the admin committed after the demotion: %d members after it, %d at the demotion", e.Room.MemberCount, demotedAt)
		}
	}
}
