package cache_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"parley"
	"parley/cache"
)

// env is a cache over an inner store, with the reads that reach the inner
// store counted. ref reads the inner store directly: the truth the cache must
// agree with. fake is the inner store when it is the fake.
type env struct {
	c    *cache.Store
	ref  parley.Store
	fake *fakeStore
	cnt  *counting
	user []parley.User
	room []parley.Room
}

// newEnv makes a cache over the fake store.
func newEnv(t *testing.T, cfg cache.Config) *env {
	t.Helper()
	fake := newFakeStore(nil)
	cnt := newCounting(fake)
	c := cache.New(cnt, cfg)
	fake.sink = c.Apply
	return &env{c: c, ref: fake, fake: fake, cnt: cnt}
}

// newSQLiteEnv makes a cache over SQLite.
func newSQLiteEnv(t *testing.T, cfg cache.Config) *env {
	t.Helper()
	var cnt *counting
	c, inner := openCachedSQLite(t, cfg, nil, func(s parley.Store) parley.Store {
		cnt = newCounting(s)
		return cnt
	})
	return &env{c: c, ref: inner, cnt: cnt}
}

// backends are the inner stores the behavioural tests run on.
var backends = []struct {
	name   string
	newEnv func(*testing.T, cache.Config) *env
}{
	{"fake", newEnv},
	{"sqlite", newSQLiteEnv},
}

var ctx = context.Background()

func (e *env) mustUser(t *testing.T, name string) parley.User {
	t.Helper()
	u, err := e.c.CreateUser(ctx, parley.NewUser{Name: name})
	if err != nil {
		t.Fatalf("CreateUser(%q): %v", name, err)
	}
	e.user = append(e.user, u)
	return u
}

func (e *env) mustRoom(t *testing.T, creator parley.User, title string) parley.Room {
	t.Helper()
	r, _, err := e.c.CreateRoom(ctx, parley.NewRoom{Kind: parley.KindGroup, Title: title, CreatorID: creator.ID})
	if err != nil {
		t.Fatalf("CreateRoom(%q): %v", title, err)
	}
	e.room = append(e.room, r)
	return r
}

func (e *env) mustJoin(t *testing.T, r parley.Room, u parley.User) {
	t.Helper()
	if _, _, err := e.c.Join(ctx, r.ID, u.ID); err != nil {
		t.Fatalf("Join(%s, %s): %v", r.Title, u.Name, err)
	}
}

func (e *env) mustSend(t *testing.T, r parley.Room, u parley.User, body string) parley.Message {
	t.Helper()
	m, _, err := e.c.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: body})
	if err != nil {
		t.Fatalf("Send(%s, %q): %v", r.Title, body, err)
	}
	return m
}

// pages are the history pages checked for every room.
var pages = []parley.Page{
	parley.Newest(1), parley.Newest(10), parley.Newest(50), parley.Newest(100),
	{Before: 5, After: -1, Limit: 3}, {Before: 40, After: -1, Limit: 20}, {Before: 1000, After: -1, Limit: 7},
	{After: 0, Limit: 10}, {After: 17, Limit: 50}, {After: 95, Limit: 100}, {After: 1000, Limit: 5},
	{Before: 1, After: -1, Limit: 5},
}

// check compares every read of the cache with the same read of the fake.
func (e *env) check(t *testing.T) {
	t.Helper()
	for _, r := range e.room {
		want, werr := e.ref.Room(ctx, r.ID)
		got, err := e.c.Room(ctx, r.ID)
		if werr == nil && !reflect.DeepEqual(got, want) || parley.ErrorCode(err) != parley.ErrorCode(werr) {
			t.Errorf("Room(%s) = %+v, %v; want %+v, %v", r.Title, got, err, want, werr)
		}
		wantIDs, _ := e.ref.Members(ctx, r.ID)
		gotIDs, err := e.c.Members(ctx, r.ID)
		if err != nil || !slices.Equal(sortedIDs(gotIDs), sortedIDs(wantIDs)) {
			t.Errorf("Members(%s) = %v, %v; want %v", r.Title, sortedIDs(gotIDs), err, sortedIDs(wantIDs))
		}
		wantList, _ := e.ref.RoomMembers(ctx, r.ID)
		gotList, err := e.c.RoomMembers(ctx, r.ID)
		if err != nil || !reflect.DeepEqual(sortedList(gotList), sortedList(wantList)) {
			t.Errorf("RoomMembers(%s) = %+v, %v; want %+v", r.Title, sortedList(gotList), err, sortedList(wantList))
		}
		last := want.LastSeq
		relative := []parley.Page{
			{Before: last - 120, After: -1, Limit: 50}, {Before: last - 180, After: -1, Limit: 10},
			{Before: last - 90, After: -1, Limit: 100}, {After: last - 150, Limit: 100},
			{After: last - 199, Limit: 100}, {After: last - 250, Limit: 100},
		}
		for _, p := range append(pages, relative...) {
			if p.Before < 0 || p.After < -1 {
				continue
			}
			want, werr := e.ref.Messages(ctx, r.ID, p)
			got, err := e.c.Messages(ctx, r.ID, p)
			if !equalMessages(got, want) || parley.ErrorCode(err) != parley.ErrorCode(werr) {
				t.Errorf("Messages(%s, %+v) = %v, %v; want %v, %v", r.Title, p, seqs(got), err, seqs(want), werr)
			}
		}
		for _, u := range e.user {
			want, werr := e.ref.Member(ctx, r.ID, u.ID)
			got, err := e.c.Member(ctx, r.ID, u.ID)
			if werr == nil && got != want || parley.ErrorCode(err) != parley.ErrorCode(werr) {
				t.Errorf("Member(%s, %s) = %+v, %v; want %+v, %v", r.Title, u.Name, got, err, want, werr)
			}
		}
	}
	for _, u := range e.user {
		want, _ := e.ref.Memberships(ctx, u.ID)
		got, err := e.c.Memberships(ctx, u.ID)
		byRoom := func(a, b parley.Member) int { return strings.Compare(a.RoomID, b.RoomID) }
		slices.SortFunc(want, byRoom)
		slices.SortFunc(got, byRoom)
		if err != nil || !(len(got) == 0 && len(want) == 0 || reflect.DeepEqual(got, want)) {
			t.Errorf("Memberships(%s) = %+v, %v; want %+v", u.Name, got, err, want)
		}
		for _, limit := range []int{1, 2, 3, 50} {
			e.checkRooms(t, u, limit)
		}
	}
}

// checkRooms walks the user's whole room list in pages of limit.
func (e *env) checkRooms(t *testing.T, u parley.User, limit int) {
	t.Helper()
	cursor := ""
	for range 100 {
		want, wnext, werr := e.ref.Rooms(ctx, u.ID, cursor, limit)
		got, next, err := e.c.Rooms(ctx, u.ID, cursor, limit)
		if err != nil || werr != nil || next != wnext || !equalEntries(got, want) {
			t.Errorf("Rooms(%s, %q, %d) = %s, %q, %v; want %s, %q, %v",
				u.Name, cursor, limit, entries(got), next, err, entries(want), wnext, werr)
			return
		}
		if next == "" {
			return
		}
		cursor = next
	}
	t.Errorf("Rooms(%s, _, %d): more than 100 pages", u.Name, limit)
}

func equalMessages(a, b []parley.Message) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}

func equalEntries(a, b []parley.RoomEntry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Room != b[i].Room || a[i].Unread != b[i].Unread ||
			(a[i].LastMessage == nil) != (b[i].LastMessage == nil) ||
			a[i].LastMessage != nil && !reflect.DeepEqual(*a[i].LastMessage, *b[i].LastMessage) {
			return false
		}
	}
	return true
}

func seqs(ms []parley.Message) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.Seq
	}
	return out
}

func entries(es []parley.RoomEntry) string {
	var b strings.Builder
	for _, e := range es {
		last := int64(0)
		if e.LastMessage != nil {
			last = e.LastMessage.Seq
		}
		fmt.Fprintf(&b, "[%s seq=%d last=%d unread=%d n=%d] ", e.Room.Title, e.Room.LastSeq, last, e.Unread, e.Room.MemberCount)
	}
	return b.String()
}

// script runs n random writes through the cache, with a check every so
// often.
func (e *env) script(t *testing.T, rng *rand.Rand, n int) {
	t.Helper()
	for i := range n {
		u := e.user[rng.IntN(len(e.user))]
		r := e.room[rng.IntN(len(e.room))]
		switch rng.IntN(10) {
		case 0:
			e.c.Join(ctx, r.ID, u.ID)
		case 1:
			e.c.Leave(ctx, r.ID, u.ID)
		case 2:
			e.c.MarkRead(ctx, r.ID, u.ID, int64(rng.IntN(200)))
		default:
			e.c.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: fmt.Sprint("m", i)})
		}
		if i%97 == 0 {
			e.check(t)
		}
	}
	e.check(t)
}

// populate makes users and rooms, everyone a member of most rooms.
func (e *env) populate(t *testing.T, users, rooms int) {
	t.Helper()
	for i := range users {
		e.mustUser(t, fmt.Sprint("user", i))
	}
	for i := range rooms {
		r := e.mustRoom(t, e.user[i%users], fmt.Sprint("room", i))
		for j, u := range e.user {
			if u.ID != e.user[i%users].ID && (i+j)%4 != 0 {
				e.mustJoin(t, r, u)
			}
		}
	}
}

// TestMatchesInner runs random writes through caches of several sizes and
// compares every read with the inner store's.
func TestMatchesInner(t *testing.T) {
	for _, be := range backends {
		for _, tc := range []struct {
			name string
			cfg  cache.Config
		}{
			{"defaults", cache.Config{}},
			{"small window", cache.Config{RecentMessages: 7}},
			{"evicting", cache.Config{RecentMessages: 30, MaxRooms: 2, MaxUsers: 2, MaxTokens: 1}},
		} {
			t.Run(be.name+"/"+tc.name, func(t *testing.T) {
				e := be.newEnv(t, tc.cfg)
				e.populate(t, 5, 6)
				e.check(t) // cold: everything loads
				e.script(t, rand.New(rand.NewPCG(1, 2)), 1500)
			})
		}
	}
}

// TestSteadyState checks that after a warm-up the hot reads never reach the
// inner store, while writes keep changing what they return.
func TestSteadyState(t *testing.T) {
	e := newEnv(t, cache.Config{})
	e.populate(t, 4, 8)
	for i := range 120 {
		e.mustSend(t, e.room[i%len(e.room)], e.user[i%len(e.user)], fmt.Sprint("warm", i))
	}
	e.check(t) // warm-up
	e.cnt.reset()

	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 500 {
		u := e.user[rng.IntN(len(e.user))]
		r := e.room[rng.IntN(len(e.room))]
		switch rng.IntN(4) {
		case 0:
			e.c.MarkRead(ctx, r.ID, u.ID, int64(rng.IntN(200)))
		default:
			e.c.Send(ctx, parley.NewMessage{RoomID: r.ID, SenderID: u.ID, SenderName: u.Name, Body: fmt.Sprint("m", i)})
		}
		for _, u := range e.user {
			want, wnext, _ := e.ref.Rooms(ctx, u.ID, "", 50)
			got, next, err := e.c.Rooms(ctx, u.ID, "", 50)
			if err != nil || next != wnext || !equalEntries(got, want) {
				t.Fatalf("Rooms(%s) = %s, %v; want %s", u.Name, entries(got), err, entries(want))
			}
		}
		for _, p := range []parley.Page{parley.Newest(50), parley.Newest(100), {After: r.LastSeq, Limit: 50}} {
			want, _ := e.ref.Messages(ctx, r.ID, p)
			got, err := e.c.Messages(ctx, r.ID, p)
			if err != nil || !equalMessages(got, want) {
				t.Fatalf("Messages(%s, %+v) = %v, %v; want %v", r.Title, p, seqs(got), err, seqs(want))
			}
		}
		e.c.Room(ctx, r.ID)
		e.c.Members(ctx, r.ID)
		e.c.Member(ctx, r.ID, u.ID)
	}
	if n := e.cnt.reset(); len(n) != 0 {
		t.Errorf("inner reads in steady state: %v, want none", n)
	}
}

// TestReadYourWrites checks that a read through the cache right after a
// write through it sees the write, with no warm-up.
func TestReadYourWrites(t *testing.T) {
	e := newEnv(t, cache.Config{})
	alice, bob := e.mustUser(t, "alice"), e.mustUser(t, "bob")
	r := e.mustRoom(t, alice, "r")
	e.c.Rooms(ctx, bob.ID, "", 10) // cache bob's (empty) memberships
	e.c.Members(ctx, r.ID)

	e.mustJoin(t, r, bob)
	if ids, _ := e.c.Members(ctx, r.ID); !slices.Contains(ids, bob.ID) {
		t.Errorf("Members after Join = %v, want bob in it", ids)
	}
	if list, _, _ := e.c.Rooms(ctx, bob.ID, "", 10); len(list) != 1 {
		t.Errorf("Rooms(bob) after Join = %s, want the room", entries(list))
	}
	m := e.mustSend(t, r, alice, "hi")
	if page, _ := e.c.Messages(ctx, r.ID, parley.Newest(10)); len(page) == 0 || !reflect.DeepEqual(page[0], m) {
		t.Errorf("Messages after Send = %v, want %d first", seqs(page), m.Seq)
	}
	if got, _ := e.c.Room(ctx, r.ID); got.LastSeq != m.Seq {
		t.Errorf("Room.LastSeq after Send = %d, want %d", got.LastSeq, m.Seq)
	}
	if list, _, _ := e.c.Rooms(ctx, bob.ID, "", 10); len(list) != 1 || list[0].Unread != 1 || !reflect.DeepEqual(*list[0].LastMessage, m) {
		t.Errorf("Rooms(bob) after Send = %s, want 1 unread", entries(list))
	}
	if _, err := e.c.MarkRead(ctx, r.ID, bob.ID, m.Seq); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.c.Member(ctx, r.ID, bob.ID); got.ReadSeq != m.Seq {
		t.Errorf("Member(bob).ReadSeq after MarkRead = %d, want %d", got.ReadSeq, m.Seq)
	}
	if _, err := e.c.Leave(ctx, r.ID, bob.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.c.Member(ctx, r.ID, bob.ID); parley.ErrorCode(err) != parley.CodeNotFound {
		t.Errorf("Member(bob) after Leave: %v, want not_found", err)
	}
	if ids, _ := e.c.Members(ctx, r.ID); slices.Contains(ids, bob.ID) {
		t.Errorf("Members after Leave = %v, want no bob", ids)
	}
	e.check(t)
}

// TestFirstPage checks that the shared first page of a room list follows
// every change that shows in it, including those that do not move the room
// (a join changes member_count, a read the unread count).
func TestFirstPage(t *testing.T) {
	for _, be := range backends {
		t.Run(be.name, func(t *testing.T) {
			e := be.newEnv(t, cache.Config{})
			alice, bob, carol := e.mustUser(t, "alice"), e.mustUser(t, "bob"), e.mustUser(t, "carol")
			r1, r2 := e.mustRoom(t, alice, "r1"), e.mustRoom(t, alice, "r2")
			e.mustJoin(t, r1, bob)
			e.mustSend(t, r1, bob, "hi")
			e.mustSend(t, r2, alice, "hello")
			steps := []struct {
				name string
				do   func()
			}{
				{"nothing", func() {}},
				{"join", func() { e.mustJoin(t, r1, carol) }},
				{"read", func() { e.c.MarkRead(ctx, r1.ID, alice.ID, 1) }},
				{"send", func() { e.mustSend(t, r1, carol, "hey") }},
				{"others read", func() { e.c.MarkRead(ctx, r1.ID, carol.ID, 1) }},
				{"leave", func() { e.c.Leave(ctx, r2.ID, alice.ID) }},
				{"rejoin", func() { e.mustJoin(t, r2, alice) }},
			}
			for _, st := range steps {
				st.do()
				for _, limit := range []int{1, 2, 10} {
					for range 2 { // built, then shared
						want, wnext, _ := e.ref.Rooms(ctx, alice.ID, "", limit)
						got, next, err := e.c.Rooms(ctx, alice.ID, "", limit)
						if err != nil || next != wnext || !equalEntries(got, want) {
							t.Errorf("after %s: Rooms(alice, %d) = %s, %q, %v; want %s, %q", st.name, limit, entries(got), next, err, entries(want), wnext)
						}
					}
				}
			}
		})
	}
}

// TestSharedResults checks that the results the cache shares with callers
// (member ids, newest-first pages, last messages) never change under them,
// and that appending to one does not reach the cache.
func TestSharedResults(t *testing.T) {
	e := newEnv(t, cache.Config{RecentMessages: 8})
	alice, bob := e.mustUser(t, "alice"), e.mustUser(t, "bob")
	r := e.mustRoom(t, alice, "r")
	for i := range 5 {
		e.mustSend(t, r, alice, fmt.Sprint(i))
	}
	ids, _ := e.c.Members(ctx, r.ID)
	page, _ := e.c.Messages(ctx, r.ID, parley.Newest(5))
	list, _, _ := e.c.Rooms(ctx, alice.ID, "", 10)
	wantIDs, wantPage, wantLast := slices.Clone(ids), slices.Clone(page), *list[0].LastMessage

	_ = append(page, parley.Message{ID: "appended"})
	_ = append(ids, "appended")
	e.mustJoin(t, r, bob)
	e.c.Leave(ctx, r.ID, alice.ID)
	for i := range 30 { // past the window's cap: trims and new arrays
		e.mustSend(t, r, bob, fmt.Sprint("more", i))
		e.c.Messages(ctx, r.ID, parley.Newest(1+i%8))
	}
	if !slices.Equal(ids, wantIDs) {
		t.Errorf("a held Members slice changed from %v to %v", wantIDs, ids)
	}
	if !reflect.DeepEqual(page, wantPage) {
		t.Errorf("a held page changed from %v to %v", seqs(wantPage), seqs(page))
	}
	if !reflect.DeepEqual(*list[0].LastMessage, wantLast) {
		t.Errorf("a held LastMessage changed from %d to %d", wantLast.Seq, list[0].LastMessage.Seq)
	}
	if after, _ := e.c.Members(ctx, r.ID); !slices.Equal(after, []string{bob.ID}) {
		t.Errorf("Members = %v, want [bob]", after)
	}
	e.check(t)
}

// TestNewRoomNeedsNoLoad checks that a room created through the cache is
// served entirely from the events.
func TestNewRoomNeedsNoLoad(t *testing.T) {
	e := newEnv(t, cache.Config{})
	alice := e.mustUser(t, "alice")
	r := e.mustRoom(t, alice, "r")
	e.mustSend(t, r, alice, "one")
	e.cnt.reset()
	e.c.Room(ctx, r.ID)
	e.c.Members(ctx, r.ID)
	e.c.Messages(ctx, r.ID, parley.Newest(50))
	e.c.Messages(ctx, r.ID, parley.Page{After: 0, Limit: 50})
	if n := e.cnt.reset(); len(n) != 0 {
		t.Errorf("inner reads for a new room: %v, want none", n)
	}
}

// TestWindowHole checks that the window never serves a page across a hole:
// a message event that skips a seq restarts the window.
func TestWindowHole(t *testing.T) {
	e := newEnv(t, cache.Config{})
	alice := e.mustUser(t, "alice")
	r := e.mustRoom(t, alice, "r")
	var last parley.Message
	for i := range 10 {
		last = e.mustSend(t, r, alice, fmt.Sprint(i))
	}
	// An event for seq 12 with no 11: the cache must not serve 12..3.
	room, _ := e.ref.Room(ctx, r.ID)
	room.LastSeq = last.Seq + 2
	gap := last
	gap.Seq, gap.ID = last.Seq+2, "gap"
	e.c.Apply([]parley.Event{{Kind: parley.EventMessage, Room: room, UserID: alice.ID, Message: gap}})
	e.cnt.reset()
	e.c.Messages(ctx, r.ID, parley.Newest(10))
	if n := e.cnt.reset(); n["Messages"] == 0 {
		t.Errorf("a page across a hole was served from memory")
	}
	page, err := e.c.Messages(ctx, r.ID, parley.Newest(1))
	if err != nil || len(page) != 1 || page[0].ID != "gap" {
		t.Errorf("Messages(Newest(1)) = %v, %v; want the message after the hole", page, err)
	}
}

// TestTokens checks that a token is cached until it expires and that expiry
// is checked on every hit.
func TestTokens(t *testing.T) {
	e := newEnv(t, cache.Config{})
	alice := e.mustUser(t, "alice")
	t0 := parley.Now()
	tok := parley.Token{Hash: []byte("h1"), UserID: alice.ID, CreatedAt: t0, ExpiresAt: t0.Add(time.Hour)}
	if err := e.c.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	for i, tc := range []struct {
		now       time.Time
		wantCode  string
		wantInner int
	}{
		{t0, "", 1},                       // miss
		{t0.Add(30 * time.Minute), "", 0}, // hit
		{t0.Add(time.Hour - 1), "", 0},    // hit, just before expiry
		{t0.Add(time.Hour), parley.CodeUnauthorized, 1},
		{t0, "", 1}, // the expired entry was dropped: asked again
	} {
		e.cnt.reset()
		u, _, err := e.c.TokenUser(ctx, []byte("h1"), tc.now)
		if parley.ErrorCode(err) != tc.wantCode || err == nil && u != alice {
			t.Errorf("%d: TokenUser(at %v) = %v, %v; want code %q", i, tc.now.Sub(t0), u, err, tc.wantCode)
		}
		if n := e.cnt.reset()["TokenUser"]; n != tc.wantInner {
			t.Errorf("%d: TokenUser(at %v) reached the inner store %d times, want %d", i, tc.now.Sub(t0), n, tc.wantInner)
		}
	}
	if _, _, err := e.c.TokenUser(ctx, []byte("nope"), t0); parley.ErrorCode(err) != parley.CodeUnauthorized {
		t.Errorf("TokenUser(unknown) = %v, want unauthorized", err)
	}
}

// TestMetrics checks the request counter.
func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	ref := newFakeStore(nil)
	c := cache.New(ref, cache.Config{Registerer: reg})
	ref.sink = c.Apply
	cache.New(ref, cache.Config{Registerer: reg}) // a second cache shares the counter
	u, _ := c.CreateUser(ctx, parley.NewUser{Name: "alice"})
	c.User(ctx, u.ID)
	c.User(ctx, u.ID)
	c.User(ctx, u.ID)
	got := map[string]float64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "parley_cache_requests_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			var kind, result string
			for _, l := range m.GetLabel() {
				switch l.GetName() {
				case "kind":
					kind = l.GetValue()
				case "result":
					result = l.GetValue()
				}
			}
			got[kind+"/"+result] = m.GetCounter().GetValue()
		}
	}
	if got["user/hit"] != 2 || got["user/miss"] != 1 {
		t.Errorf("parley_cache_requests_total = %v, want user/hit 2, user/miss 1", got)
	}
}

// TestAllocs checks that the hot reads allocate only their results.
func TestAllocs(t *testing.T) {
	e := newEnv(t, cache.Config{})
	alice := e.mustUser(t, "alice")
	for i := range 50 {
		r := e.mustRoom(t, alice, fmt.Sprint("room", i))
		e.mustSend(t, r, alice, "hello")
	}
	r := e.room[0]
	for i := range 60 {
		e.mustSend(t, r, alice, fmt.Sprint(i))
	}
	first, _, _ := e.c.Rooms(ctx, alice.ID, "", 2)
	cursor := parley.CursorOf(first[1].Room).String()
	e.c.Rooms(ctx, alice.ID, "", 50)
	e.c.Messages(ctx, r.ID, parley.Newest(50))
	for _, tc := range []struct {
		name string
		max  float64
		f    func()
	}{
		{"Rooms", 0, func() { e.c.Rooms(ctx, alice.ID, "", 50) }}, // the first page, unchanged
		{"Rooms after a cursor", 1, func() { e.c.Rooms(ctx, alice.ID, cursor, 50) }},
		{"Messages", 0, func() { e.c.Messages(ctx, r.ID, parley.Newest(50)) }},
		{"Members", 0, func() { e.c.Members(ctx, r.ID) }},
		{"Room", 0, func() { e.c.Room(ctx, r.ID) }},
	} {
		if n := testing.AllocsPerRun(100, tc.f); n > tc.max {
			t.Errorf("%s allocates %v times, want at most %v", tc.name, n, tc.max)
		}
	}
}
