package cluster

import (
	"context"
	"time"

	"parley"
)

// run drains the queue until Close; it owns rooms.
func (r *Relay) run() {
	defer close(r.done)
	for {
		r.qmu.Lock()
		batch := r.queue
		r.queue = r.spare[:0]
		closing := r.closing
		r.qmu.Unlock()
		r.m.queued.Set(0)
		for i := range batch {
			r.handle(&batch[i])
			if batch[i].done != nil {
				close(batch[i].done)
			}
			batch[i] = item{}
		}
		r.spare = batch
		if len(batch) > 0 {
			continue
		}
		if closing {
			for _, st := range r.rooms {
				if st.timer != nil {
					st.timer.Stop()
				}
			}
			return
		}
		<-r.wake
	}
}

func (r *Relay) handle(it *item) {
	switch {
	case it.tick != "":
		r.gapTimeout(it.tick)
	case it.snap != nil:
		it.snap <- r.snapshot()
	case it.heads != nil:
		r.catchUpHeads(it.heads)
	case it.gap != nil:
		r.gapRead(it.gap)
	case it.batch != nil:
		r.receive(it.batch)
	default:
		for i := range it.local {
			r.local(&it.local[i])
		}
		r.flushOut(it.mark)
	}
}

// local relays one event this node committed: it delivers a message to
// the local sessions now, and notes what goes to other nodes (batches,
// heads) for the sender, which waits for the hot data (send.go).
func (r *Relay) local(ev *parley.Event) {
	roomID := ev.Room.ID
	switch ev.Kind {
	case parley.EventRoom:
		r.routes.invalidateRoom(roomID)
	case parley.EventMessage:
		r.m.messages.WithLabelValues("local").Inc()
		rt := r.route(roomID)
		for node, users := range r.destinations(rt) {
			if node != r.cfg.Node {
				r.publishLater(parley.Batch{Node: node, Event: *ev, Recipients: users}, "message")
			}
		}
		r.headLater(roomID, ev.Message.Seq)
		r.offer(ev.Message, rt.members, true)
	case parley.EventEdited, parley.EventDeleted, parley.EventReaction, parley.EventThread, parley.EventPin:
		r.localChange(ev)
	case parley.EventJoin, parley.EventLeave, parley.EventRole, parley.EventRoomInfo, parley.EventUnban:
		// The room's nodes and the user's: the one who left or was
		// removed has their subscriptions ended there (Reason travels
		// with the event), and every node's room events hear of it.
		rt := r.route(roomID)
		targets := map[string]bool{}
		for node := range rt.nodes {
			targets[node] = true
		}
		if ev.UserID != "" {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			userNodes, err := r.presence.Nodes(ctx, []string{ev.UserID})
			cancel()
			if err != nil {
				r.m.routeErrors.Inc()
			}
			for _, node := range userNodes[ev.UserID] {
				targets[node] = true
			}
		}
		if ev.Kind == parley.EventJoin || ev.Kind == parley.EventLeave {
			r.routes.invalidateRoom(roomID)
		}
		if ev.Kind == parley.EventLeave {
			r.cfg.ApplyLeaves([]parley.Event{*ev})
		}
		for node := range targets {
			if node != r.cfg.Node {
				r.publishLater(parley.Batch{Node: node, Event: *ev}, "member")
			}
		}
	}
}

// publish hands a batch to the broker now. Only the sender goroutine
// calls it: the run goroutine notes a commit's batches with publishLater,
// so that they wait for the hot data (send.go).
func (r *Relay) publish(b parley.Batch, kind string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := r.broker.Publish(ctx, b); err != nil {
		r.m.publishErrors.Inc()
		r.log.Warn("cluster: publish", "node", b.Node, "err", err)
		return
	}
	r.m.batches.WithLabelValues(kind).Inc()
}

// receive takes a batch from another node.
func (r *Relay) receive(b *parley.Batch) {
	ev := &b.Event
	switch ev.Kind {
	case parley.EventMessage:
		r.m.messages.WithLabelValues("remote").Inc()
		r.offer(ev.Message, b.Recipients, false)
		r.toEvents(ev) // its sender's read position moved: no publish of its own
	case parley.EventEdited, parley.EventDeleted, parley.EventReaction, parley.EventThread, parley.EventPin:
		r.applyChanges(ev)
		r.toEvents(ev) // edited and deleted events for this node's subscribers
	case parley.EventJoin, parley.EventLeave:
		r.routes.invalidateRoom(ev.Room.ID)
		if ev.Kind == parley.EventLeave {
			r.cfg.ApplyLeaves([]parley.Event{*ev})
		}
		r.toEvents(ev)
	case parley.EventRole, parley.EventRoomInfo, parley.EventUnban, parley.EventTyping, parley.EventReads, parley.EventMention:
		r.toEvents(ev)
	}
}

func (r *Relay) toEvents(ev *parley.Event) {
	if r.cfg.Events != nil {
		r.cfg.Events(*ev)
	}
}
