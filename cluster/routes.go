package cluster

import (
	"context"
	"slices"
	"sync"
	"time"
)

// route is where a room's members are.
type route struct {
	members []string
	nodes   map[string][]string // node -> members with a session there
	at      time.Time
}

type memberList struct {
	ids []string
	at  time.Time
}

// presenceRead is one read of presence in progress (nodesOf): the
// changes made while it runs, whose results it must not remember. The run
// goroutine and the signal goroutine (signals.go) may read at once.
type presenceRead struct {
	changed map[string]bool // users changed during the read
	all     bool            // everything changed during the read
}

// userNodes is one user's nodes as read from presence.
type userNodes struct {
	nodes []string
	at    time.Time
}

// maxWhere bounds the users whose nodes are remembered.
const maxWhere = 200_000

// maxFallbackRoutes bounds the rooms whose last route is kept as a
// fallback (routeCache.lastGood).
const maxFallbackRoutes = 100_000

// routeCache is what the relay remembers of where rooms' members are: the
// routes per room, the members per room, each user's nodes, the last good
// route of each room (the fallback when presence or the store fails), and
// the nodes it knows of. The run goroutine and the signal goroutine read
// and fill it; the presence and broker hooks invalidate it. It makes no calls: the relay
// reads the store and presence without its lock and hands it the results,
// with the generations it saw before the read, so that a result an
// invalidation overtook is not kept.
type routeCache struct {
	ttl    time.Duration // Config.RouteTTL
	settle time.Duration // Config.Settle

	mu          sync.Mutex // guards the following fields
	gen         uint64     // bumped by every invalidation
	mgen        uint64     // bumped by every invalidation of members (joins, leaves)
	routes      map[string]*route
	lastGood    map[string]*route // the last route built per room, kept through invalidations: the fallback when presence or the store fails
	members     map[string]*memberList
	where       map[string]*userNodes      // user -> their nodes as last read (nil nodes: offline)
	reads       map[*presenceRead]struct{} // reads of presence in progress (nodesOf): each notes the changes
	lastGone    map[string]time.Time
	known       map[string]time.Time // nodes seen in a route or the live nodes, and when
	unsureUntil time.Time            // routes may miss nodes until then (see Config.Settle)
	resetCheck  time.Time            // when a presence reset last asked for a head check
}

func newRouteCache(ttl, settle time.Duration) *routeCache {
	return &routeCache{
		ttl:      ttl,
		settle:   settle,
		routes:   map[string]*route{},
		lastGood: map[string]*route{},
		members:  map[string]*memberList{},
		where:    map[string]*userNodes{},
		reads:    map[*presenceRead]struct{}{},
		lastGone: map[string]time.Time{},
		known:    map[string]time.Time{},
	}
}

// presenceChanged drops every route, and the user's remembered nodes
// (everyone's for "").
func (c *routeCache) presenceChanged(userID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	clear(c.routes)
	if userID == "" {
		clear(c.where)
	} else {
		delete(c.where, userID)
	}
	for rd := range c.reads {
		rd.changed[userID] = true
		rd.all = rd.all || userID == ""
	}
}

// allMovedLocked marks every read in progress as overtaken by a change of
// everything.
func (c *routeCache) allMovedLocked() {
	for rd := range c.reads {
		rd.all = true
	}
}

// reset is a presence reset (Redis emptied, or its subscription lost):
// routes are unsure for Config.Settle, and what was read from presence
// meanwhile may miss nodes, so nothing of it is kept: the cached routes and
// users' nodes are dropped, and a read in progress is not remembered. It
// reports whether the caller should check the heads: at the first reset of
// a spell, then at most once per Settle.
func (c *routeCache) reset() (checkHeads bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	checkHeads = !now.Before(c.unsureUntil) || now.Sub(c.resetCheck) >= c.settle
	if checkHeads {
		c.resetCheck = now
	}
	c.unsureUntil = now.Add(c.settle)
	c.gen++
	clear(c.routes)
	clear(c.where)
	c.allMovedLocked()
	return checkHeads
}

// setUnsure makes routes unsure for Config.Settle from now.
func (c *routeCache) setUnsure() {
	c.mu.Lock()
	c.unsureUntil = time.Now().Add(c.settle)
	c.mu.Unlock()
}

// nodeGone forgets node and drops every route and every user's nodes;
// false, changing nothing, if it did so for node less than a second ago.
func (c *routeCache) nodeGone(node string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if time.Since(c.lastGone[node]) < time.Second {
		return false
	}
	c.lastGone[node] = time.Now()
	delete(c.known, node)
	c.gen++
	clear(c.routes)
	clear(c.where)
	c.allMovedLocked()
	return true
}

// invalidateRoom forgets a room's members and route.
func (c *routeCache) invalidateRoom(roomID string) {
	c.mu.Lock()
	c.gen++
	c.mgen++
	delete(c.routes, roomID)
	delete(c.members, roomID)
	c.mu.Unlock()
}

// lookup returns the room's cached route and members (either nil when
// absent) and the generations to hand back to keep.
func (c *routeCache) lookup(roomID string) (rt *route, ml *memberList, gen, mgen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.routes[roomID], c.members[roomID], c.gen, c.mgen
}

// keep stores a route built from a read that began at generations gen and
// mgen: the route if no invalidation came since, the members if no
// invalidation of members came since, and the route as the room's last
// good one in any case; the route's nodes become known.
func (c *routeCache) keep(roomID string, fresh *route, ml *memberList, gen, mgen uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	for node := range fresh.nodes {
		c.known[node] = now
	}
	if c.gen == gen {
		c.routes[roomID] = fresh
	}
	if c.mgen == mgen { // presence changes do not touch the members
		c.members[roomID] = ml
	}
	if len(c.lastGood) >= maxFallbackRoutes {
		clear(c.lastGood)
	}
	c.lastGood[roomID] = fresh
}

// fallback is the room's last route, dropped since, for the members it
// still has (members: the room's current ones), or the members alone.
func (c *routeCache) fallback(roomID string, members []string) *route {
	c.mu.Lock()
	last := c.lastGood[roomID]
	c.mu.Unlock()
	out := &route{members: members, nodes: map[string][]string{}}
	if last == nil {
		return out
	}
	current := make(map[string]bool, len(members))
	for _, u := range members {
		current[u] = true
	}
	for node, users := range last.nodes {
		for _, u := range users {
			if current[u] {
				out.nodes[node] = append(out.nodes[node], u)
			}
		}
	}
	return out
}

// remembered returns the nodes of the users remembered (for less than
// RouteTTL) at now, the users it does not remember, and when the oldest
// remembered was read. With users missing, it starts noting the presence
// changes in rd, for the read of them that the caller makes next and
// reports with remember.
func (c *routeCache) remembered(users []string, now time.Time) (out map[string][]string, missing []string, oldest time.Time, rd *presenceRead) {
	out = make(map[string][]string, len(users))
	oldest = now
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, u := range users {
		if w := c.where[u]; w != nil && now.Sub(w.at) < c.ttl {
			out[u] = w.nodes
			if w.at.Before(oldest) {
				oldest = w.at
			}
		} else {
			missing = append(missing, u)
		}
	}
	if len(missing) > 0 {
		rd = &presenceRead{changed: map[string]bool{}}
		c.reads[rd] = struct{}{}
	}
	return out, missing, oldest, rd
}

// remember ends the read of presence rd that remembered started at now: on
// success (ok) it remembers the nodes found for the missing
// users, but for the users a presence change named during the read (all
// of them after a change of everything).
func (c *routeCache) remember(rd *presenceRead, missing []string, found map[string][]string, ok bool, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.reads, rd)
	if !ok {
		return
	}
	if len(c.where)+len(missing) > maxWhere {
		c.forgetStaleLocked(now)
	}
	for _, u := range missing {
		if !rd.all && !rd.changed[u] && len(c.where) < maxWhere {
			c.where[u] = &userNodes{nodes: found[u], at: now}
		}
	}
}

// forgetStaleLocked drops the remembered nodes older than RouteTTL, or all
// of them if that is not enough to stay under maxWhere.
func (c *routeCache) forgetStaleLocked(now time.Time) {
	for u, w := range c.where {
		if now.Sub(w.at) >= c.ttl {
			delete(c.where, u)
		}
	}
	if len(c.where) >= maxWhere*3/4 {
		clear(c.where)
	}
}

// routeNodes returns the nodes of a room's cached route, sorted.
func (c *routeCache) routeNodes(roomID string) []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []string
	if rt := c.routes[roomID]; rt != nil {
		for n := range rt.nodes {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// liveNodes adds the live nodes to the known ones; while routes are sure
// it forgets the known nodes that are not live (reaped, closed), and in
// any case those not seen for knownTTL.
func (c *routeCache) liveNodes(nodes []string) {
	now := time.Now()
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range nodes {
		c.known[n] = now
	}
	sure := !now.Before(c.unsureUntil)
	for n, seen := range c.known {
		if now.Sub(seen) > knownTTL || (sure && seen != now) {
			delete(c.known, n)
		}
	}
}

// unsure reports whether routes may be missing nodes now: presence could
// not be read, or was reset, within the last Config.Settle.
func (c *routeCache) unsure() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Before(c.unsureUntil)
}

// addKnown sets every known node in out to members.
func (c *routeCache) addKnown(out map[string][]string, members []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for node := range c.known {
		out[node] = members
	}
}

// route returns where a room's members are, from the cache or from the
// store and presence. On failure it returns the cached route, expired; or,
// when presence fails, the last route it built for the room (dropped
// since) cut to the current members; or an empty route.
func (r *Relay) route(roomID string) *route {
	rt, ml, gen, mgen := r.routes.lookup(roomID)
	if rt != nil && time.Since(rt.at) < r.cfg.RouteTTL {
		return rt
	}
	r.m.routeMisses.Inc()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if ml == nil || time.Since(ml.at) >= 3*r.cfg.RouteTTL {
		ids, err := r.cfg.Store.Members(ctx, roomID)
		if err != nil {
			r.m.routeErrors.Inc()
			r.log.Error("cluster: members", "room", roomID, "err", err)
			if rt != nil {
				return rt
			}
			return &route{}
		}
		ml = &memberList{ids: ids, at: time.Now()}
	}
	nodes, oldest, err := r.nodesOf(ctx, ml.ids)
	if err != nil {
		r.m.routeErrors.Inc()
		if !r.presenceDown.Swap(true) { // once a spell: a hung Redis fails every message's read
			r.log.Error("cluster: presence unreachable; messages go to every known node until it answers", "room", roomID, "err", err)
		}
		r.routes.setUnsure()
		if rt != nil {
			return rt
		}
		return r.routes.fallback(roomID, ml.ids)
	}
	if r.presenceDown.Swap(false) {
		r.log.Info("cluster: presence reachable again")
	}
	// The route lives RouteTTL from its oldest presence read, as if it
	// had read them all then.
	fresh := &route{members: ml.ids, nodes: map[string][]string{}, at: oldest}
	for _, u := range ml.ids {
		for _, node := range nodes[u] {
			fresh.nodes[node] = append(fresh.nodes[node], u)
		}
	}
	r.routes.keep(roomID, fresh, ml, gen, mgen)
	return fresh
}

// nodesOf returns the nodes of users: those remembered (for less than
// RouteTTL) from memory, the others read from presence in one call and
// remembered, but for the users a presence change named during the read
// (all of them after a change of everything); oldest is when the oldest
// of them was read. Only the run goroutine calls it.
func (r *Relay) nodesOf(ctx context.Context, users []string) (nodes map[string][]string, oldest time.Time, err error) {
	now := time.Now()
	out, missing, oldest, rd := r.routes.remembered(users, now)
	if len(missing) == 0 {
		return out, oldest, nil
	}
	r.m.presenceLookups.Add(float64(len(missing)))
	found, err := r.presence.Nodes(ctx, missing)
	r.routes.remember(rd, missing, found, err == nil, now)
	if err != nil {
		return nil, oldest, err
	}
	for _, u := range missing {
		out[u] = found[u]
	}
	return out, oldest, nil
}

// Nodes returns the nodes of a room's route as the relay sees it now
// (tests and diagnostics).
func (r *Relay) Nodes(roomID string) []string {
	return r.routes.routeNodes(roomID)
}
