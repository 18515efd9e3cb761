package cluster

import "parley"

// Signals: typing and coalesced reads (design §4 room events), never
// stored, go to the other nodes of their room's route on a goroutine of
// their own, apart from the run goroutine that relays messages. Routing a
// signal may miss the route cache and read the store and presence (2 s
// bound each); on the run goroutine that read would hold up every message
// of the node behind it. Here it holds up only the signals behind it.
//
// The queue is bounded (Config.MaxSignals): past it a signal is dropped
// and counted (parley_cluster_signals_dropped_total), never a message; a
// dropped typing signal is a "… is typing" not shown on other nodes, a
// dropped read signal a "seen" that waits for the next read of the room
// or for the member list.
//
// A signal is published as soon as its route is known, without waiting
// for the commits queued before it: a read event may then reach another
// node before the message it names, which clients take as they take any
// read position (the member list's read_seq is the reference).
//
// The route cache is shared with the run goroutine: each read of presence
// notes, on its own, the changes made while it runs (routes.go), so the
// two goroutines may read at once.

// Signal sends a room event that is never stored (parley.EventTyping,
// parley.EventReads with the positions this node coalesced, or
// parley.EventMention with the users to tell) to the other
// nodes of the room's route: one publish per node with online members, as
// for a message. It queues and returns; a full queue drops it.
func (r *Relay) Signal(ev parley.Event) {
	r.sigmu.Lock()
	if r.sigClosing {
		r.sigmu.Unlock()
		return
	}
	if len(r.sigq) >= r.cfg.MaxSignals {
		r.sigmu.Unlock()
		r.m.signalsDropped.Inc()
		return
	}
	r.sigq = append(r.sigq, ev)
	n := len(r.sigq)
	started := r.sigStarted
	r.sigmu.Unlock()
	r.m.signalsQueued.Set(float64(n))
	if started {
		r.wakeSignals()
	}
}

func (r *Relay) wakeSignals() {
	select {
	case r.sigWake <- struct{}{}:
	default:
	}
}

// startSignals starts the signal goroutine (Start).
func (r *Relay) startSignals() {
	r.sigmu.Lock()
	if r.sigClosing {
		r.sigmu.Unlock()
		return
	}
	r.sigStarted = true
	r.sigmu.Unlock()
	go r.signalLoop()
	r.wakeSignals()
}

// stopSignals drops the queued signals and stops the signal goroutine,
// waiting for the signal it is routing (Close).
func (r *Relay) stopSignals() {
	r.sigmu.Lock()
	if r.sigClosing {
		r.sigmu.Unlock()
		return
	}
	r.sigClosing = true
	r.sigq = nil
	started := r.sigStarted
	r.sigmu.Unlock()
	r.m.signalsQueued.Set(0)
	if started {
		r.wakeSignals()
		<-r.sigDone
	}
}

// signalLoop is the signal goroutine.
func (r *Relay) signalLoop() {
	defer close(r.sigDone)
	for {
		r.sigmu.Lock()
		q := r.sigq
		r.sigq = nil
		closing := r.sigClosing
		r.sigmu.Unlock()
		if closing {
			return
		}
		r.m.signalsQueued.Set(0)
		for i := range q {
			r.sendSignal(&q[i])
		}
		if len(q) == 0 {
			<-r.sigWake
		}
	}
}

// sendSignal publishes ev to each other node of its room's route.
func (r *Relay) sendSignal(ev *parley.Event) {
	rt := r.route(ev.Room.ID)
	for node := range rt.nodes {
		if node != r.cfg.Node {
			r.publish(parley.Batch{Node: node, Event: *ev}, "signal")
		}
	}
}
