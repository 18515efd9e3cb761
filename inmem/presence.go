package inmem

import (
	"context"
	"slices"
	"sync"
	"time"

	"parley"
)

// Registry is the shared presence map of one in-process cluster.
type Registry struct {
	mu      sync.Mutex                      // guards the following fields
	entries map[string]map[string]time.Time // user -> node -> expiry
	hooks   map[*Presence]parley.PresenceHook
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	return &Registry{entries: map[string]map[string]time.Time{}, hooks: map[*Presence]parley.PresenceHook{}}
}

// PresenceConfig configures a Presence. Zero fields take the documented
// defaults.
type PresenceConfig struct {
	// Node is this node's id (required).
	Node string
	// TTL is how long an entry lives without a heartbeat. Default 15 s.
	TTL time.Duration
	// Heartbeat is how often this node refreshes its entries. Default TTL/3.
	Heartbeat time.Duration
	// OnChange, when set, hears about every node's changes.
	OnChange parley.PresenceHook
}

// Presence is one node's in-process parley.Presence.
type Presence struct {
	reg  *Registry
	cfg  PresenceConfig
	stop chan struct{}
	done chan struct{}

	mu       sync.Mutex     // guards sessions; taken before Registry.mu
	sessions map[string]int // user -> sessions on this node
}

var _ parley.Presence = (*Presence)(nil)

// Presence returns the presence of one node and starts its heartbeat.
func (reg *Registry) Presence(cfg PresenceConfig) *Presence {
	if cfg.TTL <= 0 {
		cfg.TTL = 15 * time.Second
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = cfg.TTL / 3
	}
	p := &Presence{reg: reg, cfg: cfg, stop: make(chan struct{}), done: make(chan struct{}), sessions: map[string]int{}}
	if cfg.OnChange != nil {
		reg.mu.Lock()
		reg.hooks[p] = cfg.OnChange
		reg.mu.Unlock()
	}
	go p.heartbeat()
	return p
}

// Add implements parley.Presence.
func (p *Presence) Add(ctx context.Context, userID string) error {
	p.mu.Lock()
	p.sessions[userID]++
	first := p.sessions[userID] == 1
	if first { // under mu: a Remove racing this one writes in the same order
		p.reg.set(userID, p.cfg.Node, time.Now().Add(p.cfg.TTL))
	}
	p.mu.Unlock()
	if first {
		p.reg.notify(userID)
	}
	return nil
}

// Remove implements parley.Presence.
func (p *Presence) Remove(ctx context.Context, userID string) error {
	p.mu.Lock()
	n, ok := p.sessions[userID]
	if ok && n > 1 {
		p.sessions[userID] = n - 1
	} else {
		delete(p.sessions, userID)
	}
	if ok && n == 1 {
		p.reg.del(userID, p.cfg.Node)
	}
	p.mu.Unlock()
	if ok && n == 1 {
		p.reg.notify(userID)
	}
	return nil
}

// Nodes implements parley.Presence.
func (p *Presence) Nodes(ctx context.Context, userIDs []string) (map[string][]string, error) {
	now := time.Now()
	out := map[string][]string{}
	p.reg.mu.Lock()
	defer p.reg.mu.Unlock()
	for _, u := range userIDs {
		for node, exp := range p.reg.entries[u] {
			if exp.After(now) {
				out[u] = append(out[u], node)
			}
		}
		slices.Sort(out[u])
	}
	return out, nil
}

// DropNode implements parley.Presence.
func (p *Presence) DropNode(ctx context.Context, node string) error {
	p.reg.mu.Lock()
	for u, nodes := range p.reg.entries {
		delete(nodes, node)
		if len(nodes) == 0 {
			delete(p.reg.entries, u)
		}
	}
	p.reg.mu.Unlock()
	p.reg.notify("")
	return nil
}

// Ping implements parley.Presence.
func (p *Presence) Ping(ctx context.Context) error { return nil }

// Close implements parley.Presence: it stops the heartbeat and removes this
// node's entries.
func (p *Presence) Close() error {
	select {
	case <-p.stop:
		return nil
	default:
	}
	close(p.stop)
	<-p.done
	p.reg.mu.Lock()
	delete(p.reg.hooks, p)
	p.reg.mu.Unlock()
	p.mu.Lock()
	users := p.sessions
	p.sessions = map[string]int{}
	p.mu.Unlock()
	for u := range users {
		p.reg.del(u, p.cfg.Node)
	}
	p.reg.notify("")
	return nil
}

// Crash stops the heartbeat without removing the entries, as a killed node
// would: they expire after the TTL.
func (p *Presence) Crash() {
	close(p.stop)
	<-p.done
	p.reg.mu.Lock()
	delete(p.reg.hooks, p)
	p.reg.mu.Unlock()
}

// heartbeat refreshes this node's entries until Close, and reaps the
// entries of nodes that stopped theirs.
func (p *Presence) heartbeat() {
	defer close(p.done)
	t := time.NewTicker(p.cfg.Heartbeat)
	defer t.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		users := make([]string, 0, len(p.sessions))
		for u := range p.sessions {
			users = append(users, u)
		}
		p.mu.Unlock()
		now := time.Now()
		exp := now.Add(p.cfg.TTL)
		for _, u := range users {
			p.reg.set(u, p.cfg.Node, exp)
		}
		if p.reg.reap(now) {
			p.reg.notify("")
		}
	}
}

// reap removes the entries whose TTL has passed (their node stopped its
// heartbeat); true if it removed any.
func (reg *Registry) reap(now time.Time) bool {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	reaped := false
	for u, nodes := range reg.entries {
		for node, exp := range nodes {
			if !exp.After(now) {
				delete(nodes, node)
				reaped = true
			}
		}
		if len(nodes) == 0 {
			delete(reg.entries, u)
		}
	}
	return reaped
}

func (reg *Registry) set(user, node string, exp time.Time) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	nodes := reg.entries[user]
	if nodes == nil {
		nodes = map[string]time.Time{}
		reg.entries[user] = nodes
	}
	nodes[node] = exp
}

func (reg *Registry) del(user, node string) {
	reg.mu.Lock()
	defer reg.mu.Unlock()
	delete(reg.entries[user], node)
	if len(reg.entries[user]) == 0 {
		delete(reg.entries, user)
	}
}

// notify calls every hook, outside the lock.
func (reg *Registry) notify(user string) {
	reg.mu.Lock()
	hooks := make([]parley.PresenceHook, 0, len(reg.hooks))
	for _, h := range reg.hooks {
		hooks = append(hooks, h)
	}
	reg.mu.Unlock()
	for _, h := range hooks {
		h(user)
	}
}
