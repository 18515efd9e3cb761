package gateway

import (
	"bytes"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"parley"
)

// TestEventsNothingBeforeMembership: a non-member's SUBSCRIBE to a room's
// events gets nothing of the room while its membership is being checked,
// only the ERROR (design §5 isolation). The check is held while the room
// has a member event, which used to reach the subscription (registered
// before the check, so that a leave in between drops it) and be written
// before the refusal.
func TestEventsNothingBeforeMembership(t *testing.T) {
	forEachTransport(t, Config{}, func(t *testing.T, e *env, tr string) {
		alice, mallory := e.chat.addUser("alice"), e.chat.addUser("mallory")
		e.chat.addRoom("r1", alice)
		checking, release := make(chan struct{}), make(chan struct{})
		e.chat.mu.Lock()
		e.chat.authorizeHook = func(u parley.User, roomID string) {
			if u.ID == mallory.ID {
				checking <- struct{}{}
				<-release
			}
		}
		e.chat.mu.Unlock()
		m := e.dial(t, tr)
		m.connect("mallory")
		m.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1.events", "receipt:s"))
		<-checking
		e.chat.commit(parley.Event{Kind: parley.EventRoomInfo, Room: parley.Room{ID: "r1", Title: "secret plans"}, ActorID: alice.ID})
		e.settleEvents(t)
		close(release)
		m.expect("ERROR", "message:forbidden", "receipt-id:s")
		m.expectClosed()
	})
}

// TestEventsHeldForAMember: a member's events subscription gets the
// events that came while its membership was checked, after its RECEIPT.
func TestEventsHeldForAMember(t *testing.T) {
	e := newEnv(t, Config{})
	alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
	e.chat.addRoom("r1", alice, bob)
	checking, release := make(chan struct{}), make(chan struct{})
	e.chat.mu.Lock()
	e.chat.authorizeHook = func(u parley.User, roomID string) {
		if u.ID == bob.ID {
			checking <- struct{}{}
			<-release
		}
	}
	e.chat.mu.Unlock()
	b := e.dial(t, "tcp")
	b.connect("bob")
	b.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1.events", "receipt:s"))
	<-checking
	e.chat.commit(parley.Event{Kind: parley.EventRoomInfo, Room: parley.Room{ID: "r1", Title: "renamed"}, ActorID: alice.ID})
	e.settleEvents(t)
	close(release)
	b.expect("RECEIPT", "receipt-id:s")
	b.expect("MESSAGE", "event:member", "action:room", "user:"+alice.ID, "subscription:0")
}

// TestEventsPersonalQueueStopsAtLeave: once a member has left, their
// /user/queue/events gets nothing more of the room: not its typing, its
// reads, nor the presence of its members (only the leave itself).
func TestEventsPersonalQueueStopsAtLeave(t *testing.T) {
	e := newEnv(t, Config{})
	alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
	e.chat.addRoom("r1", alice, bob)
	b := e.dial(t, "tcp")
	b.connect("bob")
	b.send(frame("SUBSCRIBE", "", "id:all", "destination:/user/queue/events", "receipt:s"))
	b.expect("RECEIPT", "receipt-id:s")
	awaitPresenceCalls(t, e, 1)
	a := e.dial(t, "tcp")
	a.connect("alice")
	awaitPresenceCalls(t, e, 2)
	a.send(frame("SEND", "", "destination:/app/rooms.r1.typing", "receipt:t"))
	a.expect("RECEIPT", "receipt-id:t")
	e.chat.leave("r1", bob)
	b.expect("MESSAGE", "event:member", "action:left", "user:"+bob.ID)
	// alice's typing waited for its batch, her online for its quiet
	// period, a read for nothing: all after bob left.
	e.chat.commit(parley.Event{Kind: parley.EventRead, Room: parley.Room{ID: "r1", MemberCount: 1}, UserID: alice.ID, ReadSeq: 3})
	e.settleEvents(t)
	e.clock.Advance(5 * time.Second)
	e.settleEvents(t)
	// A receipt round trip: nothing came before it.
	b.send(frame("UNSUBSCRIBE", "", "id:all", "receipt:u"))
	b.expect("RECEIPT", "receipt-id:u")
}

// TestSubscriptionsEndWithTheirSession: a session that ends while its
// SUBSCRIBE frames are handled leaves no registration behind, in the hub
// nor in roomevents.Events. The session's table took each subscription before
// its registration, so a close that ran in between unregistered nothing
// and the registration that followed stayed for good: a dead session's
// subscription kept in memory and handed every event of the user. Each
// session here pipelines SUBSCRIBE frames to both personal queues while
// its user's sessions are revoked; a race, so the sessions are many.
func TestSubscriptionsEndWithTheirSession(t *testing.T) {
	var logged lockedBuffer // error lines: a frame of an ended session is none
	e := newEnv(t, Config{MaxSubscriptions: 1000,
		Logger: slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelError}))})
	u := e.chat.addUser("alice")
	var b strings.Builder
	for i := range 100 {
		b.WriteString(frame("SUBSCRIBE", "", fmt.Sprintf("id:e%d", i), "destination:/user/queue/events"))
		b.WriteString(frame("SUBSCRIBE", "", fmt.Sprintf("id:m%d", i), "destination:/user/queue/messages"))
	}
	subs := []byte(b.String())
	for range 300 {
		c := e.dial(t, "tcp")
		c.connect("alice")
		written := make(chan struct{})
		go func() {
			defer close(written)
			c.conn.Write(subs) // fails once the session is gone: fine
		}()
		// Revoke once the frames are being handled.
		for subCount(e) == 0 && t.Context().Err() == nil {
			runtime.Gosched()
		}
		e.srv.Revoke(u.ID, nil)
		<-written
		c.conn.Close()
	}
	waitFor(t, "the sessions to end", func() bool {
		e.srv.mu.Lock()
		defer e.srv.mu.Unlock()
		return len(e.srv.sessions) == 0
	})
	if n := gaugeSum(t, e, "parley_room_events_subscriptions"); n != 0 {
		t.Errorf("%v event subscriptions left after every session ended", n)
	}
	if n := gaugeSum(t, e, "parley_hub_subscriptions"); n != 0 {
		t.Errorf("%v hub subscriptions left after every session ended", n)
	}
	if l := logged.String(); l != "" {
		t.Errorf("ended sessions logged errors:\n%s", l)
	}
}

// lockedBuffer is a bytes.Buffer safe for concurrent writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// gaugeSum is the sum of the gauges named name in the env's registry.
func gaugeSum(t *testing.T, e *env, name string) float64 {
	t.Helper()
	mfs, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() == name {
			for _, m := range mf.Metric {
				sum += m.GetGauge().GetValue()
			}
		}
	}
	return sum
}

// subCount is the number of subscriptions in the tables of the env's
// sessions.
func subCount(e *env) int {
	e.srv.mu.Lock()
	var ss []*session
	for s := range e.srv.sessions {
		ss = append(ss, s)
	}
	e.srv.mu.Unlock()
	n := 0
	for _, s := range ss {
		s.mu.Lock()
		n += len(s.subs)
		s.mu.Unlock()
	}
	return n
}

// TestEventsTypingFloodCostsNoLookups: a member's typing SENDs over the
// throttle are absorbed before the membership check, so a flood of them
// costs one check per room every 2 s, not one each (in cluster mode a
// check is a Redis round trip, and typing has no rate limit).
func TestEventsTypingFloodCostsNoLookups(t *testing.T) {
	e := newEnv(t, Config{})
	alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
	e.chat.addRoom("r1", alice, bob)
	var checks atomic.Int64
	e.chat.mu.Lock()
	e.chat.authorizeHook = func(u parley.User, roomID string) { checks.Add(1) }
	e.chat.mu.Unlock()
	a := e.dial(t, "tcp")
	a.connect("alice")
	var b strings.Builder
	for i := range 200 {
		b.WriteString(frame("SEND", "", "destination:/app/rooms.r1.typing", fmt.Sprintf("receipt:t%d", i)))
	}
	a.send(b.String())
	for i := range 200 {
		a.expect("RECEIPT", fmt.Sprintf("receipt-id:t%d", i))
	}
	if n := checks.Load(); n != 1 {
		t.Fatalf("%d membership checks for 200 typing SENDs within 2 s, want 1", n)
	}
	// Past the throttle the next one is checked again: a member who left
	// meanwhile is refused.
	e.clock.Advance(2 * time.Second)
	e.chat.leave("r1", alice)
	a.send(frame("SEND", "", "destination:/app/rooms.r1.typing", "receipt:late"))
	a.expect("ERROR", "message:forbidden", "receipt-id:late")
}
