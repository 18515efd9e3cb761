package roomevents

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"parley"
	"parley/parleytest"
)

// fakeRooms serves members and memberships, and presence.
type fakeRooms struct {
	mu      sync.Mutex
	members map[string][]string
	online  map[string]bool
	seen    int // Seen calls
}

func (f *fakeRooms) Members(ctx context.Context, roomID string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.members[roomID]...), nil
}

func (f *fakeRooms) Memberships(ctx context.Context, userID string) ([]parley.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []parley.Member
	for room, ids := range f.members {
		for _, id := range ids {
			if id == userID {
				out = append(out, parley.Member{RoomID: room, UserID: id})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].RoomID < out[j].RoomID })
	return out, nil
}

func (f *fakeRooms) Seen(ctx context.Context, ids []string) (map[string]parley.Seen, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen++
	out := map[string]parley.Seen{}
	for _, id := range ids {
		out[id] = parley.Seen{Online: f.online[id]}
	}
	return out, nil
}

func (f *fakeRooms) setOnline(u string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.online[u] = on
}

// evRecorder is a Receiver that records what it gets.
type evRecorder struct {
	mu      sync.Mutex
	got     []*RoomEvent
	evicted []string
	lagged  int
	calls   int // DeliverEvents calls
}

func (r *evRecorder) DeliverEvents(evs []*RoomEvent) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, evs...)
	r.calls++
}

func (r *evRecorder) Evicted(roomID, reason string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.evicted = append(r.evicted, roomID+":"+reason)
}

func (r *evRecorder) Lagged() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lagged++
}

// kinds lists what r got as "kind:user" (and ":action" for member events).
func (r *evRecorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, ev := range r.got {
		s := ev.Kind + ":" + ev.Header("user")
		if a := ev.Header("action"); a != "" {
			s += ":" + a
		}
		out = append(out, s)
	}
	return out
}

type evEnv struct {
	ev    *Events
	clock *parleytest.Clock
	rooms *fakeRooms
	typed []string // OnTyping calls
	reads [][]parley.Read
	mu    sync.Mutex
}

func newEvEnv(t *testing.T, cfg Config) *evEnv {
	t.Helper()
	env := &evEnv{clock: parleytest.NewClock(), rooms: &fakeRooms{members: map[string][]string{}, online: map[string]bool{}}}
	cfg.Rooms, cfg.Seen = env.rooms, env.rooms
	cfg.Now, cfg.AfterFunc = env.clock.Now, env.clock.AfterFunc
	env.ev = New(cfg)
	t.Cleanup(func() { env.ev.Close() })
	return env
}

// sync waits until Events has handled everything queued before it.
func (env *evEnv) sync(t *testing.T) {
	t.Helper()
	probe := &evRecorder{}
	s := &Sub{To: probe, UserID: "probe", RoomID: "sync-room"}
	env.ev.Subscribe(s)
	defer env.ev.Unsubscribe(s)
	// A room change of the probe's room goes through the queue after
	// everything before it.
	env.ev.Apply([]parley.Event{{Kind: parley.EventRoomInfo, Room: parley.Room{ID: "sync-room"}}})
	parleytest.Eventually(t, 10*time.Second, func() bool {
		probe.mu.Lock()
		defer probe.mu.Unlock()
		return len(probe.got) > 0
	}, "events did not settle")
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEventsTypingBatch: a room's typing events wait 100 ms for more and
// reach each subscriber in one hand-off, without the subscriber's own.
func TestEventsTypingBatch(t *testing.T) {
	env := newEvEnv(t, Config{})
	env.rooms.members["r1"] = []string{"alice", "bob"}
	bobRoom, bobAll, alice := &evRecorder{}, &evRecorder{}, &evRecorder{}
	env.ev.Subscribe(&Sub{To: bobRoom, UserID: "bob", RoomID: "r1"})
	env.ev.Subscribe(&Sub{To: bobAll, UserID: "bob"})
	env.ev.Subscribe(&Sub{To: alice, UserID: "alice", RoomID: "r1"})
	for range 3 {
		env.ev.Typing("r1", "alice")
	}
	env.ev.Typing("r1", "carol")
	env.sync(t)
	if got := bobRoom.kinds(); len(got) != 0 {
		t.Fatalf("typing went out before its batch's 100 ms: %v", got)
	}
	env.clock.Advance(100 * time.Millisecond)
	env.sync(t)
	if got := bobRoom.kinds(); !equal(got, []string{"typing:alice", "typing:carol"}) || bobRoom.calls != 1 {
		t.Fatalf("bob's room events %v in %d calls, want typing:alice and typing:carol in one (the rest absorbed)", got, bobRoom.calls)
	}
	if got := alice.kinds(); !equal(got, []string{"typing:carol"}) {
		t.Fatalf("alice got %v, want carol's typing and not her own", got)
	}
	bobRoom.mu.Lock()
	bobRoom.got = nil
	bobRoom.mu.Unlock()
	env.clock.Advance(1799 * time.Millisecond)
	env.ev.Typing("r1", "alice") // 1,899 ms after the first: absorbed
	env.sync(t)
	env.clock.Advance(100 * time.Millisecond)
	env.sync(t)
	if got := bobRoom.kinds(); len(got) != 0 {
		t.Fatalf("typing within 2 s went out: %v", got)
	}
}

// TestEventsTypingThrottle: at most one typing event per user per room
// every 2 s (here without the batch's wait).
func TestEventsTypingThrottle(t *testing.T) {
	env := newEvEnv(t, Config{TypingBatch: -1})
	env.rooms.members["r1"] = []string{"alice", "bob"}
	bobRoom, bobAll, alice := &evRecorder{}, &evRecorder{}, &evRecorder{}
	env.ev.Subscribe(&Sub{To: bobRoom, UserID: "bob", RoomID: "r1"})
	env.ev.Subscribe(&Sub{To: bobAll, UserID: "bob"})
	env.ev.Subscribe(&Sub{To: alice, UserID: "alice", RoomID: "r1"})
	for range 3 {
		env.ev.Typing("r1", "alice")
	}
	env.sync(t)
	if got := bobRoom.kinds(); !equal(got, []string{"typing:alice"}) {
		t.Fatalf("bob's room events %v, want one typing:alice (the rest absorbed)", got)
	}
	if got := bobAll.kinds(); !equal(got, []string{"typing:alice"}) {
		t.Fatalf("bob's personal events %v, want one typing:alice", got)
	}
	if got := alice.kinds(); len(got) != 0 {
		t.Fatalf("the sender got %v, want nothing", got)
	}
	env.clock.Advance(1999 * time.Millisecond)
	env.ev.Typing("r1", "alice")
	env.sync(t)
	if got := bobRoom.kinds(); len(got) != 1 {
		t.Fatalf("typing within 2 s went out: %v", got)
	}
	env.clock.Advance(time.Millisecond)
	env.ev.Typing("r1", "alice")
	env.sync(t)
	if got := bobRoom.kinds(); len(got) != 2 {
		t.Fatalf("typing after 2 s: %v, want a second event", got)
	}
}

// TestEventsTypingRoomCap: a room of more than TypingMaxMembers (100 by
// default) members has no typing events, here nor on other nodes (no
// OnTyping); a room at the cap has them.
func TestEventsTypingRoomCap(t *testing.T) {
	env := newEvEnv(t, Config{TypingBatch: -1})
	env.ev.cfg.OnTyping = func(roomID, userID string) {
		env.mu.Lock()
		env.typed = append(env.typed, roomID+":"+userID)
		env.mu.Unlock()
	}
	for _, room := range []struct {
		id string
		n  int
	}{{"small", 100}, {"big", 101}} {
		ids := []string{"alice", "bob"}
		for i := len(ids); i < room.n; i++ {
			ids = append(ids, fmt.Sprintf("u%d", i))
		}
		env.rooms.members[room.id] = ids
	}
	small, big := &evRecorder{}, &evRecorder{}
	env.ev.Subscribe(&Sub{To: small, UserID: "bob", RoomID: "small"})
	env.ev.Subscribe(&Sub{To: big, UserID: "bob", RoomID: "big"})
	env.ev.Typing("small", "alice")
	env.ev.Typing("big", "alice")
	env.ev.ApplyRemote(parley.Event{Kind: parley.EventTyping, Room: parley.Room{ID: "big"}, UserID: "u7"})
	env.sync(t)
	if got := small.kinds(); !equal(got, []string{"typing:alice"}) {
		t.Errorf("room of 100: %v, want typing:alice", got)
	}
	if got := big.kinds(); len(got) != 0 {
		t.Errorf("room of 101: %v, want no typing events", got)
	}
	env.mu.Lock()
	typed := append([]string(nil), env.typed...)
	env.mu.Unlock()
	if !equal(typed, []string{"small:alice"}) {
		t.Errorf("forwarded to other nodes: %v, want small:alice only", typed)
	}
}

func TestEventsReadCoalescing(t *testing.T) {
	env := newEvEnv(t, Config{})
	env.rooms.members["r1"] = []string{"alice", "bob", "carol"}
	bob := &evRecorder{}
	env.ev.Subscribe(&Sub{To: bob, UserID: "bob", RoomID: "r1"})
	room := parley.Room{ID: "r1", MemberCount: 3}
	read := func(u string, seq int64) parley.Event {
		return parley.Event{Kind: parley.EventRead, Room: room, UserID: u, ReadSeq: seq}
	}
	// The first read of a quiet room goes out at once.
	env.ev.Apply([]parley.Event{read("alice", 3)})
	env.sync(t)
	if got := bob.kinds(); !equal(got, []string{"read:alice"}) {
		t.Fatalf("events %v, want read:alice at once", got)
	}
	// More within the second wait for its end and go out as one event.
	env.ev.Apply([]parley.Event{read("carol", 2), read("alice", 4)})
	env.ev.Apply([]parley.Event{{Kind: parley.EventMessage, Room: room, Message: parley.Message{RoomID: "r1", SenderID: "carol", Seq: 5}}})
	env.sync(t)
	if got := bob.kinds(); len(got) != 1 {
		t.Fatalf("events %v within the window, want none more", got)
	}
	env.clock.Advance(time.Second)
	env.sync(t)
	got := bob.kinds()
	if !equal(got, []string{"read:alice", "read:carol"}) {
		t.Fatalf("events %v, want a second read event after the window", got)
	}
	bob.mu.Lock()
	last := bob.got[1]
	bob.mu.Unlock()
	var body struct {
		Reads []parley.Read `json:"reads"`
	}
	if err := json.Unmarshal(last.Body, &body); err != nil {
		t.Fatal(err)
	}
	want := []parley.Read{{UserID: "alice", Seq: 4}, {UserID: "carol", Seq: 5}}
	if fmt.Sprint(body.Reads) != fmt.Sprint(want) || last.Header("seq") != "5" {
		t.Fatalf("coalesced body %s seq %s, want reads %v and seq 5", last.Body, last.Header("seq"), want)
	}
	// A room over 100 members has none.
	big := parley.Room{ID: "r1", MemberCount: 101}
	env.clock.Advance(time.Hour)
	env.ev.Apply([]parley.Event{{Kind: parley.EventRead, Room: big, UserID: "alice", ReadSeq: 9}})
	env.sync(t)
	env.clock.Advance(time.Second)
	env.sync(t)
	if got := bob.kinds(); len(got) != 2 {
		t.Fatalf("read event in a room of 101: %v", got)
	}
}

func TestEventsPresenceDebounce(t *testing.T) {
	env := newEvEnv(t, Config{})
	env.rooms.members["r1"] = []string{"alice", "bob"}
	env.rooms.members["r2"] = []string{"alice", "bob"}
	bobRoom, bobAll := &evRecorder{}, &evRecorder{}
	env.ev.Subscribe(&Sub{To: bobRoom, UserID: "bob", RoomID: "r1"})
	env.ev.Subscribe(&Sub{To: bobAll, UserID: "bob"})

	env.rooms.setOnline("alice", true)
	env.ev.PresenceChanged("alice")
	env.sync(t)
	env.clock.Advance(4999 * time.Millisecond)
	env.sync(t)
	if got := bobRoom.kinds(); len(got) != 0 {
		t.Fatalf("announced before the quiet period: %v", got)
	}
	env.clock.Advance(time.Millisecond)
	env.sync(t)
	if got := bobRoom.kinds(); !equal(got, []string{"online:alice"}) {
		t.Fatalf("room events %v, want online:alice", got)
	}
	// Two shared rooms: the personal queue hears it once.
	if got := bobAll.kinds(); !equal(got, []string{"online:alice"}) {
		t.Fatalf("personal events %v, want online:alice once", got)
	}
	// A reconnect within 5 s says nothing.
	env.rooms.setOnline("alice", false)
	env.ev.PresenceChanged("alice")
	env.sync(t)
	env.clock.Advance(3 * time.Second)
	env.rooms.setOnline("alice", true)
	env.ev.PresenceChanged("alice")
	env.sync(t)
	env.clock.Advance(5 * time.Second)
	env.sync(t)
	if got := bobRoom.kinds(); len(got) != 1 {
		t.Fatalf("a reconnect within 5 s was announced: %v", got)
	}
	env.rooms.setOnline("alice", false)
	env.ev.PresenceChanged("alice")
	env.sync(t)
	env.clock.Advance(5 * time.Second)
	env.sync(t)
	if got := bobRoom.kinds(); !equal(got, []string{"online:alice", "offline:alice"}) {
		t.Fatalf("room events %v, want online then offline", got)
	}
}

// TestEventsSeenFollowsAnnouncements: the member listing's presence
// (Events.Seen) shows a user whose change is in its quiet period as the
// events last announced them, so a listing and the online and offline
// events never disagree: no flip for a quick reconnect in either, and a
// new state in both once it is announced.
func TestEventsSeenFollowsAnnouncements(t *testing.T) {
	env := newEvEnv(t, Config{})
	env.rooms.members["r1"] = []string{"alice", "bob"}
	bob := &evRecorder{}
	env.ev.Subscribe(&Sub{To: bob, UserID: "bob", RoomID: "r1"})
	listed := func(what string, want bool) {
		t.Helper()
		got, err := env.ev.Seen(context.Background(), []string{"alice", "bob"})
		if err != nil {
			t.Fatal(err)
		}
		if got["alice"].Online != want {
			t.Fatalf("%s: alice listed online %v, want %v (events so far: %v)", what, got["alice"].Online, want, bob.kinds())
		}
	}
	env.rooms.setOnline("alice", true)
	env.ev.PresenceChanged("alice")
	listed("alice's first session, before any event", false)
	env.sync(t)
	env.clock.Advance(5 * time.Second)
	env.sync(t)
	if got := bob.kinds(); !equal(got, []string{"online:alice"}) {
		t.Fatalf("events %v, want online:alice", got)
	}
	listed("after the online event", true)

	// A reconnect within 5 s: no event, and no flip in the listing.
	env.rooms.setOnline("alice", false)
	env.ev.PresenceChanged("alice")
	listed("alice's session closed, within the quiet period", true)
	env.sync(t)
	env.clock.Advance(3 * time.Second)
	listed("3 s later", true)
	env.rooms.setOnline("alice", true)
	env.ev.PresenceChanged("alice")
	env.sync(t)
	env.clock.Advance(5 * time.Second)
	env.sync(t)
	if got := bob.kinds(); len(got) != 1 {
		t.Fatalf("events %v after a quick reconnect, want none more", got)
	}
	listed("after the quick reconnect", true)

	// Gone for good: listed online until the offline event says otherwise.
	env.rooms.setOnline("alice", false)
	env.ev.PresenceChanged("alice")
	env.sync(t)
	env.clock.Advance(4999 * time.Millisecond)
	env.sync(t)
	listed("just before the offline event", true)
	env.clock.Advance(time.Millisecond)
	env.sync(t)
	if got := bob.kinds(); !equal(got, []string{"online:alice", "offline:alice"}) {
		t.Fatalf("events %v, want online then offline", got)
	}
	listed("after the offline event", false)
}

// TestEventsPresenceChurn counts what 1,000 connections opening and
// closing at 200/s cost: every user's quiet period ends with the user
// offline, as before, so nothing is announced, and the state is read once
// per user, not once per change.
func TestEventsPresenceChurn(t *testing.T) {
	env := newEvEnv(t, Config{})
	bob := &evRecorder{}
	for i := range 1000 {
		env.rooms.members[fmt.Sprint("r", i)] = []string{fmt.Sprint("u", i), "bob"}
	}
	env.ev.Subscribe(&Sub{To: bob, UserID: "bob"})
	for i := range 1000 {
		u := fmt.Sprint("u", i)
		env.rooms.setOnline(u, true)
		env.ev.PresenceChanged(u) // opens
		env.clock.Advance(5 * time.Millisecond)
		if i >= 100 { // each connection lives 0.5 s
			v := fmt.Sprint("u", i-100)
			env.rooms.setOnline(v, false)
			env.ev.PresenceChanged(v)
		}
	}
	for i := 900; i < 1000; i++ {
		v := fmt.Sprint("u", i)
		env.rooms.setOnline(v, false)
		env.ev.PresenceChanged(v)
	}
	env.sync(t)
	env.clock.Advance(10 * time.Second)
	env.sync(t)
	if got := bob.kinds(); len(got) != 0 {
		t.Fatalf("%d events for connections shorter than the quiet period", len(got))
	}
	env.rooms.mu.Lock()
	seen := env.rooms.seen
	env.rooms.mu.Unlock()
	if seen != 1000 {
		t.Fatalf("%d presence reads for 2,000 changes of 1,000 users, want 1,000", seen)
	}
}

func TestEventsMemberAndRemoval(t *testing.T) {
	env := newEvEnv(t, Config{})
	env.rooms.members["r1"] = []string{"alice", "bob"}
	alice, bob, bobAll := &evRecorder{}, &evRecorder{}, &evRecorder{}
	env.ev.Subscribe(&Sub{To: alice, UserID: "alice", RoomID: "r1"})
	bobSub := &Sub{To: bob, UserID: "bob", RoomID: "r1"}
	env.ev.Subscribe(bobSub)
	env.ev.Subscribe(&Sub{To: bobAll, UserID: "bob"})
	room := parley.Room{ID: "r1", Title: "t", MemberCount: 2}
	env.ev.Apply([]parley.Event{{Kind: parley.EventRole, Room: room, UserID: "bob", Role: parley.RoleAdmin, ActorID: "alice"}})
	env.sync(t)
	env.rooms.mu.Lock()
	env.rooms.members["r1"] = []string{"alice"}
	env.rooms.mu.Unlock()
	room.MemberCount = 1
	env.ev.Apply([]parley.Event{{Kind: parley.EventLeave, Room: room, UserID: "bob", Reason: parley.LeaveBanned, ActorID: "alice"}})
	env.ev.Apply([]parley.Event{{Kind: parley.EventRoomInfo, Room: room, ActorID: "alice"}})
	env.ev.Apply([]parley.Event{{Kind: parley.EventUnban, Room: room, UserID: "bob", ActorID: "alice"}})
	env.sync(t)
	if got := alice.kinds(); !equal(got, []string{"member:bob:role", "member:bob:banned", "member:alice:room", "member:bob:unbanned"}) {
		t.Fatalf("alice's events %v", got)
	}
	alice.mu.Lock()
	unban := alice.got[3]
	alice.mu.Unlock()
	if unban.Header("actor") != "alice" || unban.RoomID != "r1" {
		t.Fatalf("unbanned event headers %v, want actor alice in room r1", unban.Headers)
	}
	if !bobSub.Removed() || fmt.Sprint(bob.evicted) != "[r1:banned]" {
		t.Fatalf("bob's room subscription: removed %v, evicted %v", bobSub.Removed(), bob.evicted)
	}
	// The banned user's personal queue hears the ban, not what follows.
	if got := bobAll.kinds(); !equal(got, []string{"member:bob:role", "member:bob:banned"}) {
		t.Fatalf("bob's personal events %v", got)
	}
	alice.mu.Lock()
	ev := alice.got[1]
	alice.mu.Unlock()
	var r parley.Room
	if err := json.Unmarshal(ev.Body, &r); err != nil || r.MemberCount != 1 || ev.Header("actor") != "alice" {
		t.Fatalf("ban event body %s actor %q: want the room with 1 member, actor alice", ev.Body, ev.Header("actor"))
	}
}

// TestEventsReadsForwarded: in a cluster, the PUT reads committed on this
// node go to OnReads once per window; the positions a message moves, which
// every node sees in the message itself, and those from other nodes are
// never forwarded.
func TestEventsReadsForwarded(t *testing.T) {
	var mu sync.Mutex
	var forwarded [][]parley.Read
	env := newEvEnv(t, Config{OnReads: func(room string, reads []parley.Read) {
		mu.Lock()
		defer mu.Unlock()
		forwarded = append(forwarded, reads)
	}})
	env.rooms.members["r1"] = []string{"alice", "bob"}
	room := parley.Room{ID: "r1", MemberCount: 2}
	env.ev.Apply([]parley.Event{{Kind: parley.EventMessage, Room: room, Message: parley.Message{RoomID: "r1", SenderID: "bob", Seq: 1}}})
	env.ev.Apply([]parley.Event{{Kind: parley.EventRead, Room: room, UserID: "alice", ReadSeq: 1}})
	env.ev.ApplyRemote(parley.Event{Kind: parley.EventReads, Room: room, Reads: []parley.Read{{UserID: "carol", Seq: 1}}})
	env.sync(t)
	env.clock.Advance(time.Second)
	env.sync(t)
	mu.Lock()
	defer mu.Unlock()
	if fmt.Sprint(forwarded) != "[[{alice 1}]]" {
		t.Fatalf("forwarded %v, want alice's PUT read alone, once", forwarded)
	}
}

// gatedRecorder is an evRecorder whose first delivery holds the dispatcher
// until open is closed; entered is closed when it begins.
type gatedRecorder struct {
	evRecorder
	once    sync.Once
	entered chan struct{}
	open    chan struct{}
}

func (r *gatedRecorder) DeliverEvents(evs []*RoomEvent) {
	r.once.Do(func() {
		close(r.entered)
		<-r.open
	})
	r.evRecorder.DeliverEvents(evs)
}

// TestEventsBigRoomMessagesStayOut: the messages of a room too big for read
// events never reach the bounded queue, so a burst of them while the
// dispatcher is busy cannot overflow it and drop every event subscription.
func TestEventsBigRoomMessagesStayOut(t *testing.T) {
	env := newEvEnv(t, Config{MaxQueue: 4})
	env.rooms.members["r1"] = []string{"alice", "bob"}
	gate := &gatedRecorder{entered: make(chan struct{}), open: make(chan struct{})}
	bob := &evRecorder{}
	env.ev.Subscribe(&Sub{To: gate, UserID: "alice", RoomID: "r1"})
	env.ev.Subscribe(&Sub{To: bob, UserID: "bob", RoomID: "r1"})
	small := parley.Room{ID: "r1", MemberCount: 2}
	env.ev.Apply([]parley.Event{{Kind: parley.EventRoomInfo, Room: small, ActorID: "alice"}})
	<-gate.entered // the dispatcher is held in the first delivery

	big := parley.Room{ID: "big", MemberCount: 101}
	for seq := int64(1); seq <= 20; seq++ {
		env.ev.Apply([]parley.Event{{Kind: parley.EventMessage, Room: big, Message: parley.Message{RoomID: "big", SenderID: "carol", Seq: seq}}})
		env.ev.Apply([]parley.Event{{Kind: parley.EventRead, Room: big, UserID: "dave", ReadSeq: seq}})
	}
	env.ev.Apply([]parley.Event{{Kind: parley.EventRole, Room: small, UserID: "bob", Role: parley.RoleAdmin, ActorID: "alice"}})
	close(gate.open)
	env.sync(t)

	bob.mu.Lock()
	lagged := bob.lagged
	bob.mu.Unlock()
	if got := bob.kinds(); lagged != 0 || !equal(got, []string{"member:alice:room", "member:bob:role"}) {
		t.Fatalf("bob got %v, lagged %d times: want both member events and no lag", got, lagged)
	}
}
