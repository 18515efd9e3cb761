package redis_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
	"parley/postgres/pgtest"
	"parley/redis"
)

// TestHotOwedRootEdit: a thread root is edited while the node's writes
// to Redis fail, then reacted to. The owed set keeps the message's newest
// change only (the reaction), whose write does not drop the window and
// last message as a root's edit does; the replay must drop them all the
// same, or the replies keep showing the root's old text as their excerpt.
func TestHotOwedRootEdit(t *testing.T) {
	rdb, prefix := testClient(t)
	fail := &failScripts{}
	rdb.AddHook(fail)
	n := openNodeWith(t, pgtest.Schema(t), rdb, redis.HotConfig{Prefix: prefix, RecentMessages: 20}, nil)
	ctx := context.Background()
	ann := parleytest.MustCreateUser(t, n.hot, "ann")
	r := parleytest.MustCreateRoom(t, n.hot, ann, "r", 0)
	parleytest.MustSend(t, n.hot, r, ann, "root secret")
	parleytest.MustReply(t, n.hot, r, ann, 1, "a reply")
	parleytest.AllRooms(t, n.hot, ann, 10)
	mustMessages(t, n.hot, r.ID, parley.Newest(10))
	fail.armed.Store(true)
	if _, err := n.pg.EditMessage(ctx, parley.Edit{RoomID: r.ID, Seq: 1, EditorID: ann.ID, Body: "root redacted"}); err != nil {
		t.Fatal(err)
	}
	n.hot.Await(ctx, n.hot.Mark())
	if _, _, err := n.pg.React(ctx, parley.React{RoomID: r.ID, Seq: 1, UserID: ann.ID, Emoji: "👍", Add: true}); err != nil {
		t.Fatal(err)
	}
	n.hot.Await(ctx, n.hot.Mark())
	fail.armed.Store(false)
	var page []parley.Message
	if !parleytest.Poll(20*time.Second, func() bool {
		page = mustMessages(t, n.hot, r.ID, parley.Newest(10))
		return len(page) == 2 && page[1].Body == "root redacted" && len(page[1].Reactions) > 0
	}) {
		t.Fatalf("the owed changes were not replayed: %+v", page)
	}
	if ex := page[0].ReplyTo.Excerpt; strings.Contains(ex, "secret") {
		t.Errorf("newest page: the reply's excerpt = %q after its root's edit was replayed", ex)
	}
	if ex := parleytest.AllRooms(t, n.hot, ann, 10)[0].LastMessage.ReplyTo.Excerpt; strings.Contains(ex, "secret") {
		t.Errorf("room list: the last message's excerpt = %q after its root's edit was replayed", ex)
	}
}
