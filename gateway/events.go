package gateway

import (
	"bytes"
	"context"
	"strconv"
	"strings"

	"parley"
	"parley/hub"
	"parley/roomevents"
	"parley/stomp"
)

// Room events (design §4): SUBSCRIBE /topic/rooms.{id}.events (members
// only, refused like a room subscription) and /user/queue/events (every
// room of the user); an empty SEND to /app/rooms.{id}.typing from a member
// is a typing signal. The events come from roomevents.Events and go through the
// session's one bounded outbound queue, beside its messages: a client that
// does not keep up is a slow consumer whatever it fell behind on.

// Destinations of room events.
const (
	eventsSuffix = ".events"
	userEvents   = "/user/queue/events"
	typingSuffix = ".typing"
)

// reasonEventsLag is the slow-consumer reason of an event subscription
// dropped because the node's event intake overflowed.
const reasonEventsLag = "events_lag"

// isEventsDest reports whether dest is a room event destination.
func isEventsDest(dest string) bool {
	return dest == userEvents ||
		strings.HasPrefix(dest, topicPrefix) && strings.HasSuffix(dest, eventsSuffix) &&
			len(dest) > len(topicPrefix)+len(eventsSuffix)
}

// isTypingDest reports whether dest is a room's typing destination.
func isTypingDest(dest []byte) bool {
	return bytes.HasPrefix(dest, []byte(appPrefix)) && bytes.HasSuffix(dest, []byte(typingSuffix)) &&
		len(dest) > len(appPrefix)+len(typingSuffix)
}

// subscribeEvents registers an event subscription (subscribe has parsed
// its id and ack mode): members only for a room's events, checked after
// the registration so that a leave committed in between drops it. Until
// the check passes, roomevents.Events holds the room's events back (Hold), so a
// non-member gets none of them before its ERROR; a member gets them after
// its RECEIPT.
func (s *session) subscribeEvents(f *stomp.Frame, sub *subscription, dest string) error {
	events := s.srv.cfg.Events
	if events == nil {
		return parley.Errorf(parley.CodeNotFound, "no destination %q: this server has no room events", dest)
	}
	sub.events = true
	if dest == userEvents {
		sub.user = true
	} else {
		sub.RoomID = dest[len(topicPrefix) : len(dest)-len(eventsSuffix)]
	}
	since, err := sinceChange(f, sub.RoomID) // edits.go
	if err != nil {
		return err
	}
	if since >= 0 {
		sub.ctx, sub.cancel = context.WithCancel(s.srv.ctx)
	}
	s.mu.Lock() // sub is filled in before the table takes it (see subscribe)
	u := s.user
	sub.UserID = u.ID
	sub.shape = shapeOf(sub.user, s.version, sub.ack)
	sub.ev = roomevents.Sub{To: sub, UserID: u.ID, RoomID: sub.RoomID, Hold: sub.RoomID != ""}
	err = s.addSubLocked(sub)
	s.mu.Unlock()
	if err != nil {
		if sub.cancel != nil {
			sub.cancel()
		}
		return err
	}
	events.Subscribe(&sub.ev)
	if s.closedSince() {
		sub.stop() // unregisters it, and ends a since-change's context
		return errClosed
	}
	if sub.RoomID != "" {
		ctx, cancel := context.WithTimeout(s.srv.ctx, s.srv.cfg.SendTimeout)
		_, err := s.srv.chat.Authorize(ctx, u, sub.RoomID)
		if err == nil && since > 0 {
			err = s.checkSinceChange(ctx, u, sub.RoomID, since)
		}
		cancel()
		if err != nil {
			s.dropSub(sub)
			return err
		}
	}
	if r := f.Get("receipt"); r != nil {
		s.receipt(r, nil)
	}
	if since >= 0 {
		go s.replayChanges(sub, since) // edits.go
		return nil
	}
	events.Start(&sub.ev)
	return nil
}

// typing handles an empty SEND to /app/rooms.{id}.typing: a member's
// typing signal, never stored. Signals over the throttle are absorbed by
// roomevents.Events, not refused, and before the membership check: only a
// signal that passed a check can start the throttle, and one it absorbs
// has no effect, so a flood costs one check per room every 2 s.
func (s *session) typing(f *stomp.Frame) error {
	events := s.srv.cfg.Events
	dest := f.Get("destination")
	if events == nil {
		return parley.Errorf(parley.CodeNotFound, "no destination %q: this server has no room events", dest)
	}
	if _, ok := f.Lookup("transaction"); ok {
		return parley.Errorf(parley.CodeInvalid, "transactions are not supported")
	}
	if len(f.Body) > 0 {
		return parley.Errorf(parley.CodeInvalid, "a typing SEND has an empty body")
	}
	roomID := string(dest[len(appPrefix) : len(dest)-len(typingSuffix)])
	u := s.readUser()
	if events.TypingAbsorbed(roomID, u.ID) {
		return nil
	}
	ctx, cancel := context.WithTimeout(s.srv.ctx, s.srv.cfg.SendTimeout)
	_, err := s.srv.chat.Authorize(ctx, u, roomID)
	cancel()
	if err != nil {
		return err
	}
	events.Typing(roomID, u.ID)
	return nil
}

var _ roomevents.Receiver = (*subscription)(nil)
var _ hub.Evicter = (*subscription)(nil)

// DeliverEvents queues room events; roomevents.Events calls it with its lock
// held. They are queued under one lock, so the writer takes them in one
// write.
func (sub *subscription) DeliverEvents(evs []*roomevents.RoomEvent) {
	s := sub.s
	s.mu.Lock()
	for _, ev := range evs {
		e := sub.encodedEvent(ev)
		s.enqueueLocked(outItem{ev: ev, sub: sub}, e.size+len(sub.id))
	}
	s.mu.Unlock()
}

// Evicted ends the session with ERROR forbidden: its user was removed or
// banned from the room of this subscription (a room topic or its events).
// The hub and roomevents.Events call it with their lock held.
func (sub *subscription) Evicted(roomID, reason string) {
	sub.s.refuse(parley.Errorf(parley.CodeForbidden, "you were %s from room %s", reason, roomID), nil)
}

// appendEvent appends the MESSAGE frame of ev for this subscription.
func (sub *subscription) appendEvent(dst []byte, ev *roomevents.RoomEvent) []byte {
	e := sub.encodedEvent(ev)
	if sub.ack {
		dst, _ = e.p.Append(dst, sub.id, ev.ID)
	} else {
		dst, _ = e.p.Append(dst, sub.id)
	}
	return dst
}

// encodedEvent returns ev's encoding for this subscription's shape.
func (sub *subscription) encodedEvent(ev *roomevents.RoomEvent) *encodedMessage {
	return ev.Encoded(sub.shape, func(ev *roomevents.RoomEvent) any {
		return prepareEvent(ev, sub.shape)
	}).(*encodedMessage)
}

// prepareEvent encodes ev for a shape: a MESSAGE with the event header and
// a JSON body (design §4 "Room events").
func prepareEvent(ev *roomevents.RoomEvent, shape int) *encodedMessage {
	v := stomp.V10 + stomp.Version(shape/4)
	dest := userEvents
	if shape&2 == 0 {
		dest = topicPrefix + ev.RoomID + eventsSuffix
	}
	keys := []string{"subscription"}
	if shape&1 != 0 {
		keys = append(keys, "ack")
	}
	var f stomp.Frame
	f.Command = stomp.Message
	f.Add("destination", dest)
	f.Add("message-id", ev.ID)
	f.Add("content-type", "application/json")
	f.Add("event", ev.Kind)
	if ev.RoomID != "" {
		f.Add("room", ev.RoomID)
	}
	for _, h := range ev.Headers {
		f.Add(h[0], h[1])
	}
	f.Body = ev.Body
	p, _ := stomp.Prepare(&f, v, keys...) // ids and JSON: no line feed in a header
	size := 64 + len(ev.Body)
	for i := 0; i < f.NumHeaders(); i++ {
		k, val := f.Header(i)
		size += len(k) + len(val) + 2
	}
	return &encodedMessage{p: p, size: size + len(strconv.Itoa(len(ev.Body)))}
}

// Seen reports, for each of userIDs, whether the user holds a session on
// this node and when their last one closed (zero when none closed since
// the node started): the one-node implementation of chat.Seen. It costs a
// map read per user under Server.mu and writes nothing.
func (srv *Server) Seen(ctx context.Context, userIDs []string) (map[string]parley.Seen, error) {
	out := make(map[string]parley.Seen, len(userIDs))
	srv.mu.Lock()
	defer srv.mu.Unlock()
	for _, id := range userIDs {
		out[id] = parley.Seen{Online: len(srv.users[id]) > 0, LastSeenAt: srv.lastSeen[id]}
	}
	return out, nil
}
