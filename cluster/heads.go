package cluster

import (
	"context"
	"math"
	"slices"
	"time"
)

// Heads keeps each room's head, the seq of its last committed message,
// where every node reads it (redis.Heads).
type Heads interface {
	// Advance moves each room's head forward to its seq; a head never
	// goes back.
	Advance(ctx context.Context, heads map[string]int64) error
	// Heads returns the heads of roomIDs; a room without one is absent.
	Heads(ctx context.Context, roomIDs []string) (map[string]int64, error)
}

// NodeLister lists the cluster's live nodes (redis.Presence.LiveNodes).
type NodeLister interface {
	LiveNodes(ctx context.Context) ([]string, error)
}

// Position is where the local subscribers of a room's topic are: the
// lowest and the highest of their last seqs (hub.Position).
type Position struct {
	Low, High int64
}

// Subscribed lists the rooms with local topic subscribers whose position
// is known, and where they are (hub.Hub.Rooms, hub.Hub.Room). It must not
// call into the relay.
type Subscribed interface {
	SubscribedRooms() map[string]Position
	// SubscribedRoom is one room's position; ok is false when no local
	// topic subscriber's position is known.
	SubscribedRoom(roomID string) (pos Position, ok bool)
}

// subscribedAt is where the local topic subscribers of roomID are, if
// known.
func (r *Relay) subscribedAt(roomID string) (Position, bool) {
	if r.cfg.Subscribed == nil {
		return Position{}, false
	}
	return r.cfg.Subscribed.SubscribedRoom(roomID)
}

// knownTTL is how long a node stays known without being seen in a route or
// in the live nodes.
const knownTTL = time.Minute

// CheckHeads asks the relay to compare its rooms' delivery positions with
// their heads soon, and to read what it lacks from the store: a fault has
// healed (the broker reconnected, presence was reset), and batches may
// have been lost meanwhile. It never blocks.
func (r *Relay) CheckHeads() {
	select {
	case r.checkWake <- struct{}{}:
	default:
	}
}

// noteHead records that this node committed seq in roomID, for the keeper
// to write to Heads.
func (r *Relay) noteHead(roomID string, seq int64) {
	if r.cfg.Heads == nil {
		return
	}
	r.hmu.Lock()
	if seq > r.pending[roomID] {
		r.pending[roomID] = seq
	}
	r.hmu.Unlock()
	select {
	case r.headsWake <- struct{}{}:
	default:
	}
}

// keep is the keeper goroutine, started by Start and stopped by Close: it
// writes the heads of this node's commits, and checks the heads of the
// rooms the relay delivers when asked (CheckHeads) and every
// Config.HeadCheck, refreshing the live nodes then too.
func (r *Relay) keep() {
	defer close(r.keepDone)
	t := time.NewTicker(r.cfg.HeadCheck)
	defer t.Stop()
	for {
		select {
		case <-r.stop:
			r.flushHeads()
			return
		case <-r.headsWake:
			r.flushHeads()
		case <-r.checkWake:
			r.flushHeads()
			r.tellLive(r.refreshNodes())
			r.checkHeads()
		case <-t.C:
			r.flushHeads()
			r.tellLive(r.refreshNodes())
			r.checkHeads()
		}
	}
}

// flushHeads writes the pending heads; what fails stays pending for the
// next try (the next commit, check or tick).
func (r *Relay) flushHeads() {
	if r.cfg.Heads == nil {
		return
	}
	r.hmu.Lock()
	p := r.pending
	if len(p) == 0 {
		r.hmu.Unlock()
		return
	}
	r.pending = make(map[string]int64, len(p))
	r.hmu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	err := r.cfg.Heads.Advance(ctx, p)
	cancel()
	if err == nil {
		r.headsOK()
		return
	}
	r.headsFailed("write", err)
	r.hmu.Lock()
	if len(r.pending)+len(p) <= r.cfg.MaxPositions {
		for room, seq := range p {
			if seq > r.pending[room] {
				r.pending[room] = seq
			}
		}
	}
	r.hmu.Unlock()
}

// checkHeads reads the heads of the rooms the relay delivers, and of the
// rooms with local subscribers (Config.Subscribed) that it has never
// delivered, and has the run goroutine fill the rooms whose head is past
// what it delivered, or past the subscribers' lowest position.
func (r *Relay) checkHeads() {
	if r.cfg.Heads == nil {
		return
	}
	// The flag is taken before the rooms are listed: a node's death told
	// while a check is under way must be acted on with a list made after
	// it, or the rooms this node delivered since the list was made would
	// not be read from the store (TestNodeDeathFillsFromStore, 1 run in
	// a few hundred under -race).
	fromStore := r.fromStore.Swap(false)
	reply := make(chan map[string]int64, 1)
	if !r.enqueue(item{snap: reply}) {
		return
	}
	var delivered map[string]int64
	select {
	case delivered = <-reply:
	case <-r.done:
		return
	}
	var subscribed map[string]Position
	if r.cfg.Subscribed != nil {
		subscribed = r.cfg.Subscribed.SubscribedRooms()
	}
	rooms := make([]string, 0, len(delivered)+len(subscribed))
	for room := range delivered {
		rooms = append(rooms, room)
	}
	for room := range subscribed {
		if _, ok := delivered[room]; !ok {
			rooms = append(rooms, room)
		}
	}
	behind := map[string]int64{}
	if fromStore {
		// A node died, or presence lost track of the nodes: the heads of
		// a node killed right after a commit may never have reached
		// Redis, and only the store knows its last messages. Each room is
		// read from the store to its end: one query per room when nothing
		// is missing, on an event that is rare (a node's death), so the
		// cost is bounded by the rooms this node delivers and subscribes.
		for _, room := range rooms {
			behind[room] = math.MaxInt64
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	heads, err := r.cfg.Heads.Heads(ctx, rooms)
	cancel()
	if err != nil {
		r.headsFailed("read", err)
		heads = nil // the store check above, if any, still runs
	} else {
		r.headsOK()
		r.m.headChecks.Inc()
	}
	for room, head := range heads {
		last, ok := delivered[room]
		if !ok {
			last = subscribed[room].Low
		}
		if head > last && behind[room] == 0 {
			behind[room] = head
		}
	}
	if len(behind) > 0 {
		r.enqueue(item{heads: behind})
	}
}

// headsFailed counts a failed read or write of Heads, and logs the first
// of a run of failures.
func (r *Relay) headsFailed(op string, err error) {
	r.m.headErrors.Inc()
	if !r.headsDown.Swap(true) {
		r.log.Warn("cluster: room heads unreachable; retrying", "op", op, "err", err)
	}
}

func (r *Relay) headsOK() {
	if r.headsDown.Swap(false) {
		r.log.Info("cluster: room heads reachable again")
	}
}

// snapshot is the run goroutine's answer to a check: each room's last
// delivered seq.
func (r *Relay) snapshot() map[string]int64 {
	out := make(map[string]int64, len(r.rooms))
	for room, st := range r.rooms {
		if st.next > 0 {
			out[room] = st.next - 1
		}
	}
	return out
}

// catchUpHeads runs on the run goroutine: each room is read from the store
// up to its head. A room the relay has never delivered (its first
// messages never reached this node: presence was empty when they were
// sent) is read from where its local topic subscribers are
// (Config.Subscribed), if any are known.
func (r *Relay) catchUpHeads(heads map[string]int64) {
	more := map[string]int64{}
	var subscribed map[string]Position // read once, when a room needs it
	for room, head := range heads {
		st := r.rooms[room]
		if st == nil || st.next == 0 {
			if subscribed == nil && r.cfg.Subscribed != nil {
				subscribed = r.cfg.Subscribed.SubscribedRooms()
			}
			pos, ok := subscribed[room]
			if !ok || head <= pos.Low {
				continue
			}
			st = r.startAt(room, st, pos)
		}
		if head < st.next {
			continue
		}
		if r.fill(room, st, head, "head") {
			more[room] = head
		}
	}
	if len(more) > 0 { // a fill read its maximum of pages: go on after the queue
		r.enqueue(item{heads: more})
	}
}

// startAt sets where the delivery of a room the relay has never delivered
// starts: after the lowest position of its topic subscribers, or at its
// oldest held message if that is older. The fill that follows hands each
// message to the room's subscribers and to the personal queues of its
// members here, as a live message would go. Neither gets one twice:
//
//   - A topic subscription drops every seq at or below the last one it was
//     handed (hub), so one that is ahead of the lowest (it read history
//     further) skips what it has.
//   - A personal queue merges no history: it has had only what this relay
//     delivered. In this room that is nothing, or, if the room's state was
//     evicted (Config.MaxRooms), the seqs up to the last one delivered
//     before, D. Every topic subscription whose position is known had D
//     too: it was live when D was delivered, or read history that had D,
//     or was first handed a later live message. So D <= pos.Low, and the
//     fill, which starts above pos.Low, brings a personal queue nothing it
//     had.
//   - The held messages older than pos.Low were never delivered here (they
//     are held): the topic subscriptions drop them, the personal queues
//     get them for the first time, as they would from the gap timer. (A
//     batch delivered before an eviction and brought again by the broker
//     after it is the one case that could repeat a message in a personal
//     queue; the gap timer has it too.)
//
// A live-only subscriber that has had nothing is placed at the room's last
// seq when it subscribed (hub.Hub.LiveAfter). A room whose subscribers are
// all live-only, have had nothing and whose last seq could not be read is
// not in Subscribed: where what they want starts is unknown (a fill from
// 0 would hand them the room's whole history), so it waits for the room's
// next message.
//
// catchUp uses it too, for a room first seen whose first message waited
// GapWait.
func (r *Relay) startAt(room string, st *roomState, pos Position) *roomState {
	if st == nil {
		r.evict()
		st = &roomState{}
		r.rooms[room] = st
	}
	st.used = time.Now()
	st.next = pos.Low + 1
	if low := lowestHeld(st); low > 0 && low < st.next {
		st.next = low
	}
	st.start = st.next
	r.drain(room, st)
	return st
}

// refreshNodes adds the live nodes to the known ones, and forgets those
// not seen for knownTTL. It forgets a known node that the live nodes do
// not list only when the listing is trustworthy: routes are sure (no
// presence failure or reset within Settle) and the listing names this
// node. A listing without this node, which beats as long as it runs, was
// read from a Redis that lost its data (restarted empty, flushed) before
// this node's next heartbeat: it is a reset (PresenceReset), and forgets
// nothing; otherwise the broadcast meant for exactly that moment would
// reach no other node. A node that is really gone is forgotten at once by
// Gone, or after knownTTL unseen.
//
// It returns the listing when it names this node (else nil).
func (r *Relay) refreshNodes() []string {
	if r.cfg.Nodes == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	nodes, err := r.cfg.Nodes.LiveNodes(ctx)
	cancel()
	if err != nil {
		return nil
	}
	if !slices.Contains(nodes, r.cfg.Node) {
		// Redis was emptied: a listing without this node proves nothing
		// of the others (see Presence's epoch marker).
		r.PresenceReset()
		r.routes.liveNodes(nodes)
		return nil
	}
	r.routes.liveNodes(nodes)
	return nodes
}

// tellLive hands a listing of the live nodes to Config.OnLiveNodes on the
// keeper goroutine, unless it is nil or routes are unsure (within Settle
// of a presence failure or reset the other nodes may not have written
// their entries again yet).
func (r *Relay) tellLive(nodes []string) {
	if nodes != nil && r.cfg.OnLiveNodes != nil && !r.routes.unsure() {
		r.cfg.OnLiveNodes(nodes)
	}
}

// destinations are the nodes a message of rt goes to, with their
// recipients: the route's nodes; while routes are unsure, every known
// node too, each with all the room's members (a node's hub delivers to the
// room's subscribers whatever the list, and to the personal queues of the
// listed users it holds).
func (r *Relay) destinations(rt *route) map[string][]string {
	if !r.routes.unsure() {
		return rt.nodes
	}
	out := make(map[string][]string, len(rt.nodes))
	for node := range rt.nodes {
		out[node] = rt.members
	}
	r.routes.addKnown(out, rt.members)
	r.m.broadcasts.Inc()
	return out
}
