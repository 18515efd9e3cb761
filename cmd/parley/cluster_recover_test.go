package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestClusterKilledNodeLeavesNoDeletedText: node c commits a deletion and
// is killed before its write reaches Redis (held by a proxy, then
// SIGKILL). Node b serves the deleted text from Redis at first (the
// test's premise), and once presence no longer lists c, b drops the
// room's hot data that c announced (redis.HotStore.RecoverGone) and
// serves the tombstone, in the newest page and as the room's last
// message, within a presence TTL and a few head checks.
func TestClusterKilledNodeLeavesNoDeletedText(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a node process")
	}
	env := needCluster(t)
	b := startNode(t, env, "b")
	cEnv, proxy := redisBehindProxy(t, env)
	c := startNodeProcess(t, cEnv, "c", b.Config.PresenceTTL)

	r, ms := groupRoom(t, []*Main{b}, "recover", 1)
	ann := ms[0].c
	for _, body := range []string{"one", "two", "secret"} {
		if st := ann.do("POST", "/api/rooms/"+r.ID+"/messages", map[string]string{"body": body}, nil); st != http.StatusCreated {
			t.Fatalf("send %q: %d", body, st)
		}
	}
	type entry struct {
		LastMessage *struct {
			Seq       int64   `json:"seq"`
			Body      string  `json:"body"`
			DeletedAt *string `json:"deleted_at"`
		} `json:"last_message"`
	}
	// shown is what b serves of seq 3: in its newest page and as the
	// room's last message ("" for a tombstone).
	shown := func() (page, last string) {
		var p struct {
			Messages []struct {
				Seq       int64   `json:"seq"`
				Body      string  `json:"body"`
				DeletedAt *string `json:"deleted_at"`
			} `json:"messages"`
		}
		if st := on(ann, b).do("GET", "/api/rooms/"+r.ID+"/messages?limit=10", nil, &p); st != http.StatusOK || len(p.Messages) != 3 || p.Messages[0].Seq != 3 {
			t.Fatalf("b's newest page: %d %+v", st, p.Messages)
		}
		var list struct {
			Rooms []entry `json:"rooms"`
		}
		if st := on(ann, b).do("GET", "/api/me/rooms", nil, &list); st != http.StatusOK || len(list.Rooms) != 1 || list.Rooms[0].LastMessage == nil || list.Rooms[0].LastMessage.Seq != 3 {
			t.Fatalf("b's room list: %d %+v", st, list.Rooms)
		}
		return p.Messages[0].Body, list.Rooms[0].LastMessage.Body
	}
	if page, last := shown(); page != "secret" || last != "secret" {
		t.Fatalf("before the deletion b shows %q, %q", page, last)
	}

	// From now on node c's writes of a room's window or last message (its
	// applier's, after a commit) and what follows them on their
	// connection never reach Redis; its other calls (the breaker's pings,
	// presence, the announcement of changes, "hot:dirty:") do.
	proxy.Hold([]byte("hot:w:"), []byte("hot:l:"))
	go func() {
		// Never answered: the node waits for its write to Redis, and dies.
		req, _ := http.NewRequest("DELETE", "http://"+c.addr+"/api/rooms/"+r.ID+"/messages/3", nil)
		req.Header.Set("Authorization", "Bearer "+ann.token)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	ctx := context.Background()
	db, err := pgx.Connect(ctx, env.store)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close(ctx)
	deadline := time.Now().Add(30 * time.Second)
	for {
		var deleted bool
		if err := db.QueryRow(ctx, `SELECT deleted_at IS NOT NULL FROM messages WHERE room_id = $1 AND seq = 3`, r.ID).Scan(&deleted); err != nil {
			t.Fatal(err)
		}
		if deleted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("node c did not commit the deletion: %s", c.lines())
		}
		time.Sleep(20 * time.Millisecond)
	}
	rdb := envRedis(t, env)
	if rooms, err := rdb.HKeys(ctx, env.prefix+"hot:dirty:"+c.id).Result(); err != nil || len(rooms) != 1 || rooms[0] != r.ID {
		t.Fatalf("node c announced %v (%v), want the room", rooms, err)
	}
	c.kill()
	killed := time.Now()
	if page, last := shown(); page != "secret" || last != "secret" {
		t.Fatalf("after the kill b shows %q, %q: want the stale text (the test's premise)", page, last)
	}
	deadline = killed.Add(b.Config.PresenceTTL + 10*b.Config.HeadCheck + 30*time.Second)
	for {
		page, last := shown()
		if page == "" && last == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("b still shows %q, %q %v after the kill", page, last, time.Since(killed).Round(time.Millisecond))
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("b shows the tombstone %v after the kill", time.Since(killed).Round(time.Millisecond))
	if n, err := rdb.Exists(ctx, env.prefix+"hot:dirty:"+c.id).Result(); err != nil || n != 0 {
		t.Errorf("node c's announcements still stored after its recovery (%d, %v)", n, err)
	}
}
