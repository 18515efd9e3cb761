package gateway

import (
	"testing"

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
