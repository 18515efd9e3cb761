package main

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	"parley/stomp"
)

// TestClusterRemoteReadsHoldDeliveredMessage: node a writes the shared
// hot data (Lua scripts) through a Redis that is slow for them alone,
// while its presence reads are not; a client on node b
// that receives a message of a's and at once reads the room's newest page
// and its room list on b (both from Redis, warm) finds the message there:
// a publishes a commit to b only once its hot data holds it.
func TestClusterRemoteReadsHoldDeliveredMessage(t *testing.T) {
	env := needCluster(t)
	slow, proxy := redisBehindProxy(t, env)
	a, b := startNode(t, slow, "a"), startNode(t, env, "b")
	r, ms := groupRoom(t, []*Main{a, b}, "hot", 2)
	sender, reader := ms[0], on(ms[1].c, b)
	sub := subscribe(t, b, reader.token, r.ID, -1)
	settle(t, env, presentOn{b.Config.NodeID, ms[1:]})
	sc := dialStomp(t, a, "websocket", sender.c.token)

	var page struct{ Messages []message }
	var list struct {
		Rooms []struct {
			Room        room     `json:"room"`
			LastMessage *message `json:"last_message"`
		} `json:"rooms"`
	}
	check := func(seq int64) {
		t.Helper()
		if st := reader.do("GET", "/api/rooms/"+r.ID+"/messages?limit=5", nil, &page); st != 200 {
			t.Fatalf("newest page on b: %d", st)
		}
		if len(page.Messages) == 0 || page.Messages[0].Seq < seq {
			t.Errorf("b's newest page after MESSAGE %d starts at %v, want the message", seq, seqs(page.Messages))
		}
		if st := reader.do("GET", "/api/me/rooms", nil, &list); st != 200 || len(list.Rooms) != 1 {
			t.Fatalf("room list on b: %d %+v", st, list)
		}
		if lm := list.Rooms[0].LastMessage; lm == nil || lm.Seq < seq {
			t.Errorf("b's room list after MESSAGE %d has last message %+v, want the message", seq, lm)
		}
	}
	send := func(i int) {
		t.Helper()
		sc.send(fmt.Sprintf("SEND\ndestination:/app/rooms.%s\n\nm%d\x00", r.ID, i))
		f := sub.read()
		if f.Command != stomp.Message {
			t.Fatalf("b's subscriber got %v, want MESSAGE", f)
		}
		seq, _ := strconv.ParseInt(string(f.Get("seq")), 10, 64)
		check(seq)
	}
	send(0) // and warm b's reads: from now on Redis answers them

	proxy.SetDelay(50*time.Millisecond, []byte("eval")) // the hot data's writes
	for i := 1; i <= 5; i++ {
		send(i)
	}
}
