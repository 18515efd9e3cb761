package gateway

import (
	"context"

	"parley"
	"parley/hub"
	"parley/roomevents"
)

// subscription is one SUBSCRIBE of a session; it receives from the hub.
type subscription struct {
	hub.Sub
	s      *session
	id     string         // the client's subscription id
	user   bool           // the personal queue, not a room topic
	ack    bool           // client or client-individual: MESSAGE frames carry ack
	shape  int            // the frame shape of its MESSAGE frames (see shapeOf)
	events bool           // a room event destination (events.go), not messages
	ev     roomevents.Sub // its registration with roomevents.Events, when events

	ctx    context.Context // ends with the subscription: stops a catch-up
	cancel context.CancelFunc
}

var _ hub.Receiver = (*subscription)(nil)

// Deliver queues live messages; the hub calls it with its lock held. They
// are queued under one lock, so the writer takes them in one write.
func (sub *subscription) Deliver(ms []*hub.Message) {
	s := sub.s
	s.mu.Lock()
	for _, m := range ms {
		e := sub.encoded(m)
		s.enqueueLocked(outItem{msg: m, sub: sub}, e.size+len(sub.id))
	}
	s.mu.Unlock()
}

// Lagged closes the session as a slow consumer: live messages outran its
// catch-up.
func (sub *subscription) Lagged() {
	reason := reasonCatchUpLag
	if sub.events {
		reason = reasonEventsLag // the node's event intake overflowed
	}
	s := sub.s
	s.mu.Lock()
	s.slowConsumerLocked(reason)
	s.mu.Unlock()
}

// deliverWait queues a history message, waiting while the queue is over
// half full, so that a long catch-up is paced by the client's reading.
func (sub *subscription) deliverWait(ctx context.Context, m *hub.Message) error {
	return sub.enqueueWait(ctx, outItem{msg: m, sub: sub}, sub.encoded(m).size)
}

// enqueueWait queues it (of encoded size size) once the session's queue
// is at most half full, or fails with errClosed or ctx's error: the
// pacing of every replay from the store (history, since-change).
func (sub *subscription) enqueueWait(ctx context.Context, it outItem, size int) error {
	s := sub.s
	cfg := &s.srv.cfg
	s.mu.Lock()
	defer s.mu.Unlock()
	for !s.dead && ctx.Err() == nil && s.q != nil &&
		(len(s.q.items) >= cfg.QueueFrames/2 || s.q.bytes >= cfg.QueueBytes/2) {
		s.room.Wait()
	}
	if s.dead {
		return errClosed
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	s.enqueueLocked(it, size+len(sub.id))
	return nil
}

// encoded returns m's encoding for this subscription's shape.
func (sub *subscription) encoded(m *hub.Message) *encodedMessage {
	return m.Encoded(sub.shape, func(pm *parley.Message) any {
		return prepareMessage(pm, sub.shape)
	}).(*encodedMessage)
}

// stop ends the subscription's catch-up, if any, and an event
// subscription's registration.
func (sub *subscription) stop() {
	if sub.cancel != nil {
		sub.cancel()
	}
	if sub.events && sub.s.srv.cfg.Events != nil {
		sub.s.srv.cfg.Events.Unsubscribe(&sub.ev)
	}
}

// Removed reports whether the hub, or roomevents.Events for an event
// subscription, dropped the subscription on its own.
func (sub *subscription) Removed() bool {
	return sub.Sub.Removed() || sub.ev.Removed()
}
