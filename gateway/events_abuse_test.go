package gateway

import (
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
