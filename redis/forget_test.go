package redis_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"parley"
	"parley/bulk"
	"parley/parleytest"
	"parley/postgres/pgtest"
	"parley/redis"
)

// TestForgetHot: rows written into PostgreSQL behind the nodes' back
// (parley import: a new room with members, and messages after a live
// room's last) are not what the hot data serves, until ForgetHot drops
// it: then the room list, the room's info and its newest page are read
// anew.
func TestForgetHot(t *testing.T) {
	ctx := context.Background()
	rdb, prefix := testClient(t)
	n := openNode(t, pgtest.Schema(t), rdb, prefix, nil)
	ann := parleytest.MustCreateUser(t, n.hot, "ann")
	bob := parleytest.MustCreateUser(t, n.hot, "bob")
	one := parleytest.MustCreateRoom(t, n.hot, ann, "one", 0)
	parleytest.MustJoin(t, n.hot, one, bob)
	for range 3 {
		parleytest.MustSend(t, n.hot, one, ann, "before")
	}
	roomList := func() []string {
		entries, _, err := n.hot.Rooms(ctx, bob.ID, "", 50)
		if err != nil {
			t.Fatal(err)
		}
		var titles []string
		for _, e := range entries {
			titles = append(titles, e.Room.Title)
		}
		slices.Sort(titles)
		return titles
	}
	newest := func() int64 {
		page, err := n.hot.Messages(ctx, one.ID, parley.Newest(10))
		if err != nil || len(page) == 0 {
			t.Fatalf("history: %v", err)
		}
		return page[0].Seq
	}
	if got := roomList(); !slices.Equal(got, []string{"one"}) || newest() != 3 { // warm the hot data
		t.Fatalf("before the import: rooms %q, newest seq %d", got, newest())
	}

	now := parley.Now()
	two := bulk.Room{Room: parley.Room{ID: parley.NewID(), Kind: parley.KindGroup, Title: "two", LastActivityAt: now}, CreatedAt: now}
	b := &bulk.Batch{Rooms: []bulk.Room{two},
		Members: []bulk.Member{{Member: parley.Member{RoomID: two.ID, UserID: ann.ID, Role: parley.RoleOwner, JoinedAt: now}},
			{Member: parley.Member{RoomID: two.ID, UserID: bob.ID, Role: parley.RoleMember, JoinedAt: now}}}}
	for seq := int64(4); seq <= 5; seq++ {
		b.Messages = append(b.Messages, parley.Message{ID: parley.NewID(), RoomID: one.ID, Seq: seq, SenderID: ann.ID,
			SenderName: "ann", Body: "imported", SentAt: now.Add(time.Duration(seq) * time.Second)})
	}
	if _, err := n.pg.Import(ctx, b); err != nil {
		t.Fatalf("import: %v", err)
	}
	if got := roomList(); !slices.Equal(got, []string{"one"}) || newest() != 3 {
		t.Logf("the hot data saw the import by itself: rooms %q, newest seq %d", got, newest())
	}

	if err := redis.ForgetHot(ctx, rdb, prefix, []string{one.ID, two.ID}, []string{ann.ID, bob.ID}); err != nil {
		t.Fatal(err)
	}
	if got := roomList(); !slices.Equal(got, []string{"one", "two"}) {
		t.Errorf("bob's rooms after ForgetHot = %q, want one and two", got)
	}
	if got := newest(); got != 5 {
		t.Errorf("room one's newest seq after ForgetHot = %d, want 5", got)
	}
	if r := parleytest.MustRoom(t, n.hot, one.ID); r.LastSeq != 5 {
		t.Errorf("room one's last_seq after ForgetHot = %d, want 5", r.LastSeq)
	}
	if m := parleytest.MustSend(t, n.hot, one, bob, "after"); m.Seq != 6 {
		t.Errorf("a send after the import took seq %d, want 6", m.Seq)
	}
}
