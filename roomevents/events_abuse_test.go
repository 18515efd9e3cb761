package roomevents

import (
	"context"
	"fmt"
	"testing"
	"time"

	"parley"
)

// gatedRooms is a fakeRooms whose member lookups can be held: while gate
// is set, Members signals entered and waits for gate to close, which
// holds the events' dispatcher where a slow lookup (Redis in cluster
// mode) would.
type gatedRooms struct {
	*fakeRooms
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedRooms) Members(ctx context.Context, roomID string) ([]string, error) {
	if roomID == "slow" {
		g.entered <- struct{}{}
		<-g.gate
	}
	return g.fakeRooms.Members(ctx, roomID)
}

// TestEventsFloodStaysWithItsUser: one user's typing signals, however
// many, and presence changes, however frequent, take a bounded share of
// the node's event queue, so they cannot overflow it and get every other
// user's event subscriptions dropped as lagged (design §5: one client's
// misbehaviour never reaches another user). The dispatcher is held in a
// slow member lookup meanwhile, as a Redis round trip would hold it.
func TestEventsFloodStaysWithItsUser(t *testing.T) {
	env := newEvEnv(t, Config{MaxQueue: 16, TypingBatch: -1})
	rooms := &gatedRooms{fakeRooms: env.rooms, entered: make(chan struct{}), gate: make(chan struct{})}
	env.ev.Close()
	env.ev = New(Config{MaxQueue: 16, TypingBatch: -1, Rooms: rooms, Seen: env.rooms,
		Now: env.clock.Now, AfterFunc: env.clock.AfterFunc})
	env.rooms.members["slow"] = []string{"alice", "carol"}
	env.rooms.members["r1"] = []string{"mallory", "carol"}
	carolAll, carolRoom := &evRecorder{}, &evRecorder{}
	all := &Sub{To: carolAll, UserID: "carol"}
	room := &Sub{To: carolRoom, UserID: "carol", RoomID: "r1"}
	env.ev.Subscribe(all)
	env.ev.Subscribe(room)

	env.ev.Typing("slow", "alice") // the dispatcher looks up the members of "slow"...
	<-rooms.entered                // ...and is held there
	for range 1000 {
		env.ev.Typing("r1", "mallory")
		env.ev.PresenceChanged("mallory")
	}
	close(rooms.gate)
	settleRetry(t, env.ev)
	if all.Removed() || room.Removed() {
		carolAll.mu.Lock()
		defer carolAll.mu.Unlock()
		t.Fatalf("carol's event subscriptions were dropped (lagged %d) by mallory's flood", carolAll.lagged)
	}
	if got := carolRoom.kinds(); !equal(got, []string{"typing:mallory"}) {
		t.Fatalf("carol's room events %v, want one typing:mallory (the rest absorbed)", got)
	}
}

// TestEventsOverflowOfManyUsers: the queue's bound still holds against
// many users at once: past it every event subscription is dropped as
// lagged, so nobody misses an event unknowingly.
func TestEventsOverflowOfManyUsers(t *testing.T) {
	env := newEvEnv(t, Config{MaxQueue: 16, TypingBatch: -1})
	rooms := &gatedRooms{fakeRooms: env.rooms, entered: make(chan struct{}), gate: make(chan struct{})}
	env.ev.Close()
	env.ev = New(Config{MaxQueue: 16, TypingBatch: -1, Rooms: rooms, Seen: env.rooms,
		Now: env.clock.Now, AfterFunc: env.clock.AfterFunc})
	env.rooms.members["slow"] = []string{"alice", "carol"}
	rec := &evRecorder{}
	s := &Sub{To: rec, UserID: "carol"}
	env.ev.Subscribe(s)
	env.ev.Typing("slow", "alice")
	<-rooms.entered
	for i := range 100 {
		env.ev.Typing("r1", fmt.Sprint("user", i))
	}
	close(rooms.gate)
	settleRetry(t, env.ev)
	if !s.Removed() {
		t.Fatal("the subscription was not dropped after the overflow")
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if rec.lagged != 1 {
		t.Fatalf("lagged %d times, want 1", rec.lagged)
	}
}

// settleRetry waits until ev has handled everything queued before it,
// offering its probe event again while the queue is full (a dropped
// probe).
func settleRetry(t *testing.T, ev *Events) {
	t.Helper()
	probe := &evRecorder{}
	s := &Sub{To: probe, UserID: "probe", RoomID: "sync-room"}
	ev.Subscribe(s)
	defer func() { ev.Unsubscribe(s) }()
	deadline := time.Now().Add(10 * time.Second)
	for {
		ev.Apply([]parley.Event{{Kind: parley.EventRoomInfo, Room: parley.Room{ID: "sync-room"}}})
		for range 100 {
			probe.mu.Lock()
			n := len(probe.got)
			probe.mu.Unlock()
			if n > 0 {
				return
			}
			if s.Removed() { // dropped by an overflow: register again
				s = &Sub{To: probe, UserID: "probe", RoomID: "sync-room"}
				ev.Subscribe(s)
				break
			}
			time.Sleep(time.Millisecond)
		}
		if time.Now().After(deadline) {
			t.Fatal("events did not settle")
		}
	}
}

// TestEventsHeldUntilStart: a subscription registered with Hold gets
// nothing until Start (its membership is being checked), then what came
// meanwhile, in order; one removed meanwhile gets nothing at all.
func TestEventsHeldUntilStart(t *testing.T) {
	env := newEvEnv(t, Config{TypingBatch: -1})
	env.rooms.members["r1"] = []string{"alice", "bob"}
	rec, gone := &evRecorder{}, &evRecorder{}
	s := &Sub{To: rec, UserID: "bob", RoomID: "r1", Hold: true}
	g := &Sub{To: gone, UserID: "bob", RoomID: "r1", Hold: true}
	env.ev.Subscribe(s)
	env.ev.Subscribe(g)
	env.ev.Typing("r1", "alice")
	env.ev.Apply([]parley.Event{{Kind: parley.EventRoomInfo, Room: parley.Room{ID: "r1"}, ActorID: "alice"}})
	env.sync(t)
	if got := rec.kinds(); len(got) != 0 {
		t.Fatalf("a held subscription got %v before Start", got)
	}
	env.ev.Unsubscribe(g) // its check failed
	env.ev.Start(g)
	env.ev.Start(s)
	if got := rec.kinds(); !equal(got, []string{"typing:alice", "member:alice:room"}) {
		t.Fatalf("after Start: %v, want the held typing and member events", got)
	}
	env.clock.Advance(2 * time.Second)
	env.ev.Typing("r1", "alice")
	env.sync(t)
	if got := rec.kinds(); len(got) != 3 {
		t.Fatalf("live after Start: %v", got)
	}
	if got := gone.kinds(); len(got) != 0 {
		t.Fatalf("an unsubscribed held subscription got %v", got)
	}
}

// TestEventsHeldOverflow: a held subscription that would hold more than
// maxHeld events is dropped as lagged at Start, not handed a partial run.
func TestEventsHeldOverflow(t *testing.T) {
	env := newEvEnv(t, Config{TypingBatch: -1})
	rec := &evRecorder{}
	s := &Sub{To: rec, UserID: "bob", RoomID: "r1", Hold: true}
	env.ev.Subscribe(s)
	for i := range maxHeld + 1 {
		env.ev.Typing("r1", fmt.Sprint("user", i))
	}
	env.sync(t)
	env.ev.Start(s)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if !s.Removed() || rec.lagged != 1 || len(rec.got) != 0 {
		t.Fatalf("removed %v, lagged %d, got %d events: want it dropped as lagged with nothing", s.Removed(), rec.lagged, len(rec.got))
	}
}
