package main

import (
	"bufio"
	"context"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"parley/parleytest"
)

// memberJSON is one member of GET /api/rooms/{id}/members.
type memberJSON struct {
	User       user    `json:"user"`
	Role       string  `json:"role"`
	JoinedAt   string  `json:"joined_at"`
	ReadSeq    int64   `json:"read_seq"`
	Online     bool    `json:"online"`
	LastSeenAt *string `json:"last_seen_at"`
}

type membersJSON struct {
	Members    []memberJSON `json:"members"`
	NextCursor *string      `json:"next_cursor"`
}

// names returns the members' names and roles, "name:role", in order.
func (ms membersJSON) names() []string {
	var out []string
	for _, m := range ms.Members {
		out = append(out, m.User.Name+":"+m.Role)
	}
	return out
}

// TestAPIPeople: a room's people over the real server and SQLite: roles,
// the member listing, a rename and a smaller room, a ban and its lifting,
// and who may do what.
func TestAPIPeople(t *testing.T) {
	m := MustOpenMain(t)
	owner, _ := mustSignUp(t, m.Addr(), "olga")
	admin, adminUser := mustSignUp(t, m.Addr(), "bob")
	carol, carolUser := mustSignUp(t, m.Addr(), "carol")
	dave, daveUser := mustSignUp(t, m.Addr(), "dave")
	outsider, _ := mustSignUp(t, m.Addr(), "erin")

	var g room
	if st := owner.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "people", "capacity": 10}, &g); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	for _, c := range []*client{admin, carol, dave} {
		if st := c.do("POST", "/api/rooms/"+g.ID+"/members", nil, nil); st != http.StatusCreated {
			t.Fatalf("join: %d", st)
		}
	}
	var entry memberJSON
	if st := owner.do("PUT", "/api/rooms/"+g.ID+"/members/"+adminUser.ID, map[string]string{"role": "admin"}, &entry); st != http.StatusOK ||
		entry.Role != "admin" || entry.User != adminUser || entry.JoinedAt == "" || entry.Online {
		t.Errorf("make bob admin = %d %+v", st, entry)
	}
	var sent message
	carol.do("POST", "/api/rooms/"+g.ID+"/messages", map[string]string{"body": "hi"}, &sent)

	var list membersJSON
	if st := dave.do("GET", "/api/rooms/"+g.ID+"/members", nil, &list); st != http.StatusOK || list.NextCursor != nil {
		t.Fatalf("members = %d %+v", st, list)
	}
	// Nobody holds a STOMP session here, so nobody is online: by name.
	if got, want := list.names(), []string{"bob:admin", "carol:member", "dave:member", "olga:owner"}; !slices.Equal(got, want) {
		t.Errorf("members = %v, want %v", got, want)
	}
	if c := list.Members[1]; c.ReadSeq != 1 || c.LastSeenAt != nil || c.User != carolUser {
		t.Errorf("carol's entry = %+v, want read_seq 1, last_seen_at null", c)
	}
	var page membersJSON
	if st := dave.do("GET", "/api/rooms/"+g.ID+"/members?limit=3", nil, &page); st != 200 || len(page.Members) != 3 || page.NextCursor == nil {
		t.Fatalf("members page 1 = %d %+v", st, page)
	}
	if st := dave.do("GET", "/api/rooms/"+g.ID+"/members?limit=3&cursor="+*page.NextCursor, nil, &page); st != 200 ||
		!slices.Equal(page.names(), []string{"olga:owner"}) || page.NextCursor != nil {
		t.Errorf("members page 2 = %d %+v", st, page)
	}
	if st := outsider.do("GET", "/api/rooms/"+g.ID+"/members", nil, nil); st != http.StatusNotFound {
		t.Errorf("outsider's members = %d, want 404", st)
	}

	// Room info: the admin renames it and shrinks it to its members.
	var r room
	if st := admin.do("PATCH", "/api/rooms/"+g.ID, map[string]any{"title": "renamed", "capacity": 4}, &r); st != 200 || r.Title != "renamed" || r.Capacity != 4 {
		t.Errorf("PATCH = %d %+v", st, r)
	}
	var apiErr apiError
	if st := owner.do("PATCH", "/api/rooms/"+g.ID, map[string]any{"capacity": 3}, &apiErr); st != http.StatusConflict || apiErr.Error.Code != "conflict" {
		t.Errorf("PATCH capacity 3 of 4 = %d %+v, want 409 conflict", st, apiErr)
	}
	if st := outsider.do("POST", "/api/rooms/"+g.ID+"/members", nil, &apiErr); st != http.StatusConflict || apiErr.Error.Code != "room_full" {
		t.Errorf("join the full room = %d %+v, want 409 room_full", st, apiErr)
	}
	if st := carol.do("PATCH", "/api/rooms/"+g.ID, map[string]any{"title": "mine"}, nil); st != http.StatusForbidden {
		t.Errorf("member's PATCH = %d, want 403", st)
	}
	if st := admin.do("PUT", "/api/rooms/"+g.ID+"/members/"+carolUser.ID, map[string]string{"role": "admin"}, nil); st != http.StatusForbidden {
		t.Errorf("admin's PUT role = %d, want 403 (owner only)", st)
	}

	// The admin bans carol: she is out, cannot join, sees nothing.
	if st := admin.do("DELETE", "/api/rooms/"+g.ID+"/members/"+carolUser.ID+"?ban=true", nil, nil); st != http.StatusNoContent {
		t.Fatalf("ban carol = %d", st)
	}
	if st := carol.do("POST", "/api/rooms/"+g.ID+"/members", nil, &apiErr); st != http.StatusForbidden || apiErr.Error.Code != "forbidden" {
		t.Errorf("banned join = %d %+v, want 403 forbidden", st, apiErr)
	}
	if st := carol.do("GET", "/api/rooms/"+g.ID+"/messages", nil, nil); st != http.StatusForbidden {
		t.Errorf("banned history = %d, want 403", st)
	}
	if st := carol.do("GET", "/api/rooms/"+g.ID+"/members", nil, nil); st != http.StatusNotFound {
		t.Errorf("banned members = %d, want 404", st)
	}
	var bans struct {
		Bans []struct {
			User     user   `json:"user"`
			BannedBy string `json:"banned_by"`
			BannedAt string `json:"banned_at"`
		} `json:"bans"`
	}
	if st := owner.do("GET", "/api/rooms/"+g.ID+"/bans", nil, &bans); st != 200 || len(bans.Bans) != 1 || bans.Bans[0].User != carolUser ||
		bans.Bans[0].BannedBy != adminUser.ID || bans.Bans[0].BannedAt == "" {
		t.Errorf("bans = %d %+v", st, bans)
	}
	if st := dave.do("GET", "/api/rooms/"+g.ID+"/bans", nil, nil); st != http.StatusForbidden {
		t.Errorf("member's bans = %d, want 403", st)
	}
	// An admin cannot remove the owner or an admin; the owner can.
	if st := admin.do("DELETE", "/api/rooms/"+g.ID+"/members/"+daveUser.ID, nil, nil); st != http.StatusNoContent {
		t.Errorf("admin removes dave = %d, want 204", st)
	}
	// The other moderators' ban lists hear of the unban (a member event).
	sc := subscribeEvents(t, m, admin.token, g.ID, false)
	if st := owner.do("DELETE", "/api/rooms/"+g.ID+"/bans/"+carolUser.ID, nil, nil); st != http.StatusNoContent {
		t.Errorf("unban = %d", st)
	}
	if f := nextEvent(t, sc, "member", carolUser.ID); string(f.Get("action")) != "unbanned" || string(f.Get("actor")) != owner.userID(t) {
		t.Errorf("event after the unban: %v, want member unbanned by the owner", f)
	}
	if st := carol.do("POST", "/api/rooms/"+g.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Errorf("join after unban = %d, want 201", st)
	}
	if st := owner.do("DELETE", "/api/rooms/"+g.ID+"/members/me", nil, nil); st != http.StatusNoContent {
		t.Errorf("owner leaves = %d", st)
	}
	// The admin is the owner now.
	dave.do("POST", "/api/rooms/"+g.ID+"/members", nil, nil)
	if st := carol.do("GET", "/api/rooms/"+g.ID+"/members", nil, &list); st != 200 ||
		!slices.Equal(list.names(), []string{"bob:owner", "carol:member", "dave:member"}) {
		t.Errorf("members after the owner left = %d %v", st, list.names())
	}

	// A direct room has no moderation.
	var d room
	if st := owner.do("POST", "/api/rooms", map[string]any{"kind": "direct", "peer": daveUser.ID}, &d); st != http.StatusCreated {
		t.Fatalf("direct room = %d", st)
	}
	if st := dave.do("PATCH", "/api/rooms/"+d.ID, map[string]any{"title": "x"}, nil); st != http.StatusForbidden {
		t.Errorf("PATCH direct = %d, want 403", st)
	}
	if st := dave.do("GET", "/api/rooms/"+d.ID+"/members", nil, &list); st != 200 || len(list.Members) != 2 {
		t.Errorf("direct members = %d %+v", st, list)
	}
}

// readKinds are the kinds of parley_store_queries_total a members listing
// could send: the membership check and the listing. Not the token's check:
// a node reads every token from PostgreSQL again after its revocation
// subscription drops (redis/revoke.go), which a loaded machine can cause
// in the middle of the test; nor the cluster's own reads (gap fills, head
// checks), which are other kinds.
var readKinds = []string{"member", "memberships", "room_exists", "room_members"}

// storeQueries returns parley_store_queries_total of each of readKinds on
// the nodes, summed over them.
func storeQueries(t *testing.T, nodes ...*Main) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, m := range nodes {
		resp, err := http.Get("http://" + m.Addr() + "/metrics")
		if err != nil {
			t.Fatalf("metrics: %v", err)
		}
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "parley_store_queries_total{"); ok {
				labels, v, _ := strings.Cut(line, "} ")
				kind, _ := strings.CutPrefix(labels, `kind="`)
				if kind = strings.TrimSuffix(kind, `"`); slices.Contains(readKinds, kind) {
					f, _ := strconv.ParseFloat(v, 64)
					out[kind] += f
				}
			}
		}
		resp.Body.Close()
	}
	return out
}

// grew returns the kinds whose count is higher in after than in before.
func grew(before, after map[string]float64) map[string]float64 {
	d := map[string]float64{}
	for k, v := range after {
		if v > before[k] {
			d[k] = v - before[k]
		}
	}
	return d
}

// TestClusterMembers: in cluster mode the member listing is the same on
// every node, follows changes made on another node, and once warm is
// served without a PostgreSQL query on either node.
func TestClusterMembers(t *testing.T) {
	env := needCluster(t)
	a, b := startNode(t, env, "a", oneAddress), startNode(t, env, "b", oneAddress)
	owner, _ := mustSignUp(t, a.Addr(), "olga")
	bob, bobUser := mustSignUp(t, b.Addr(), "bob")
	carol, _ := mustSignUp(t, b.Addr(), "carol")
	var g room
	if st := owner.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "people"}, &g); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	for _, c := range []*client{bob, carol} {
		if st := c.do("POST", "/api/rooms/"+g.ID+"/members", nil, nil); st != http.StatusCreated {
			t.Fatalf("join: %d", st)
		}
	}
	if st := owner.do("PUT", "/api/rooms/"+g.ID+"/members/"+bobUser.ID, map[string]string{"role": "admin"}, nil); st != 200 {
		t.Fatalf("make bob admin: %d", st)
	}
	want := []string{"bob:admin", "carol:member", "olga:owner"}
	list := func(c *client) membersJSON {
		t.Helper()
		var l membersJSON
		if st := c.do("GET", "/api/rooms/"+g.ID+"/members", nil, &l); st != http.StatusOK {
			t.Fatalf("members: %d", st)
		}
		return l
	}
	for _, n := range []*Main{a, b} {
		for _, c := range []*client{owner, bob, carol} {
			if got := list(on(c, n)).names(); !slices.Equal(got, want) {
				t.Errorf("node %s, %s's members = %v, want %v", n.Config.NodeID, c.token[:4], got, want)
			}
		}
	}
	// Steady state: messages and reads flow, listings are read on both
	// nodes, and neither asks PostgreSQL for them.
	for i := range 6 {
		sender := []*client{on(carol, a), on(bob, b)}[i%2]
		var msg message
		if st := sender.do("POST", "/api/rooms/"+g.ID+"/messages", map[string]string{"body": "steady"}, &msg); st != http.StatusCreated {
			t.Fatalf("send: %d", st)
		}
		if st := on(owner, b).do("PUT", "/api/rooms/"+g.ID+"/read", map[string]int64{"seq": msg.Seq}, nil); st != http.StatusNoContent {
			t.Fatalf("read: %d", st)
		}
		before := storeQueries(t, a, b)
		for _, n := range []*Main{a, b} {
			l := list(on(owner, n))
			if !slices.Equal(l.names(), want) || l.Members[2].ReadSeq != msg.Seq {
				t.Errorf("node %s members = %v, owner read_seq %d, want %v and %d", n.Config.NodeID, l.names(), l.Members[2].ReadSeq, want, msg.Seq)
			}
		}
		if got := grew(before, storeQueries(t, a, b)); len(got) != 0 {
			t.Errorf("after message %d: the member listings sent statements to PostgreSQL: %v, want none", i, got)
		}
	}
	// A change on B shows on A.
	if st := on(bob, b).do("DELETE", "/api/rooms/"+g.ID+"/members/"+carol.userID(t)+"?ban=true", nil, nil); st != http.StatusNoContent {
		t.Fatalf("ban carol: %d", st)
	}
	if got := list(on(owner, a)).names(); !slices.Equal(got, []string{"bob:admin", "olga:owner"}) {
		t.Errorf("node a members after the ban on b = %v", got)
	}
}

// userID returns the id of the client's user.
func (c *client) userID(t *testing.T) string {
	t.Helper()
	var u user
	if st := c.do("GET", "/api/me", nil, &u); st != http.StatusOK {
		t.Fatalf("me: %d", st)
	}
	return u.ID
}

// TestMembersShowPresence: the member listing takes online and
// last_seen_at from the node's presence as the room events announce it
// (chat.Config.Seen): a member with a live STOMP session is listed first
// and online once announced; once the session ends they are offline with
// the time it ended, once announced.
func TestMembersShowPresence(t *testing.T) {
	m := MustOpenMain(t)
	owner, _ := mustSignUp(t, m.Addr(), "olga")
	zed, zedUser := mustSignUp(t, m.Addr(), "zed")
	var g room
	if st := owner.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "presence"}, &g); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := zed.do("POST", "/api/rooms/"+g.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: %d", st)
	}
	sc := dialStomp(t, m, "websocket", zed.token)
	var list membersJSON
	if !parleytest.Poll(15*time.Second, func() bool { // the presence quiet period is 5 s
		if st := owner.do("GET", "/api/rooms/"+g.ID+"/members", nil, &list); st != http.StatusOK || len(list.Members) != 2 {
			t.Fatalf("members = %d %+v", st, list)
		}
		// zed sorts after olga by name, but online members come first.
		first := list.Members[0]
		return first.User == zedUser && first.Online
	}) {
		t.Fatalf("members = %+v, want zed first and online", list.Members)
	}
	sc.conn.Close()
	if !parleytest.Poll(15*time.Second, func() bool {
		owner.do("GET", "/api/rooms/"+g.ID+"/members", nil, &list)
		z := list.Members[len(list.Members)-1]
		return z.User == zedUser && !z.Online && z.LastSeenAt != nil
	}) {
		t.Fatalf("members = %+v 15 s after zed's session closed, want zed offline with last_seen_at", list.Members)
	}
}

// TestMembersAgreeWithPresenceEvents: the member listing reports presence
// as the online and offline events have told it (debounced 5 s), never
// the instant state: a member is listed offline until their online event,
// and a quick reconnect, which the events say nothing of, shows no flip in
// the listing either.
func TestMembersAgreeWithPresenceEvents(t *testing.T) {
	m := MustOpenMain(t)
	owner, _ := mustSignUp(t, m.Addr(), "olga")
	zed, zedUser := mustSignUp(t, m.Addr(), "zed")
	var g room
	if st := owner.do("POST", "/api/rooms", map[string]any{"kind": "group", "title": "presence"}, &g); st != http.StatusCreated {
		t.Fatalf("create room: %d", st)
	}
	if st := zed.do("POST", "/api/rooms/"+g.ID+"/members", nil, nil); st != http.StatusCreated {
		t.Fatalf("join: %d", st)
	}
	sc := subscribeEvents(t, m, owner.token, g.ID, false)
	zedListed := func(what string, want bool) {
		t.Helper()
		var list membersJSON
		if st := owner.do("GET", "/api/rooms/"+g.ID+"/members", nil, &list); st != http.StatusOK {
			t.Fatalf("members = %d", st)
		}
		for _, e := range list.Members {
			if e.User == zedUser && e.Online != want {
				t.Fatalf("%s: zed listed online %v, want %v", what, e.Online, want)
			}
		}
	}
	zedLive := func(want bool) { // the gateway's instant state
		t.Helper()
		parleytest.Eventually(t, 10*time.Second, func() bool {
			seen, _ := m.gateway.Seen(context.Background(), []string{zedUser.ID})
			return seen[zedUser.ID].Online == want
		}, "the gateway never had zed online %v", want)
	}
	z := dialStomp(t, m, "websocket", zed.token)
	zedLive(true)
	zedListed("zed connected, no online event yet", false)
	nextEvent(t, sc, "online", zedUser.ID)
	zedListed("after the online event", true)

	z.conn.Close()
	zedLive(false)
	zedListed("zed's session closed, no offline event", true)
	z = dialStomp(t, m, "websocket", zed.token) // back within the quiet period
	zedLive(true)
	zedListed("zed back", true)
	z.conn.Close()
	zedLive(false)
	if f := nextEvent(t, sc, "offline", zedUser.ID); f == nil {
		t.Fatal("no offline event")
	}
	zedListed("after the offline event", false)
}
