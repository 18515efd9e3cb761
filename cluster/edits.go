package cluster

import "parley"

// Edits and deletions (EventEdited, EventDeleted) travel like joins: each
// one this node commits is published once to every other node that may
// care, those of the room's route (with the members they hold, for their
// sessions) and every other known node (with none: what it holds of the
// room is its own history cache, which must forget the changed message).
// Each node hands its own changes and those it receives to
// Config.ApplyChanges; the batches go out once the hot data holds the
// change (Config.Written, as every batch of a commit). The Redis hot data needs no batch: every node reads
// what the committing node wrote there. Changes carry their own number,
// so they need no order between nodes: a receiver keeps the newest.

// localChange relays a change this node committed. It reads the live
// nodes first (Config.Nodes, one round trip; changes are rare next to
// messages), so that a node that came up since the last head check is not
// left with a stale history block.
func (r *Relay) localChange(ev *parley.Event) {
	r.refreshNodes()
	rt := r.route(ev.Room.ID)
	targets := make(map[string][]string, len(rt.nodes))
	for node, users := range r.destinations(rt) {
		targets[node] = users
	}
	for _, node := range r.routes.knownNodes() {
		if _, ok := targets[node]; !ok {
			targets[node] = nil
		}
	}
	r.applyChanges(ev)
	for node, users := range targets {
		if node != r.cfg.Node {
			r.publishLater(parley.Batch{Node: node, Event: *ev, Recipients: users}, "change")
		}
	}
}

// applyChanges hands a change to Config.ApplyChanges, if set.
func (r *Relay) applyChanges(ev *parley.Event) {
	if r.cfg.ApplyChanges != nil {
		r.cfg.ApplyChanges([]parley.Event{*ev})
	}
}

// knownNodes lists the nodes seen in a route or listed live lately.
func (c *routeCache) knownNodes() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.known))
	for node := range c.known {
		out = append(out, node)
	}
	return out
}
