package redis

import (
	"context"
	"errors"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// heartbeat registers the node and reaps dead nodes at once, then every
// Heartbeat until Close it does so again and refreshes every local user's
// entry. When it
// finds entries missing (Redis was flushed, or another node dropped this
// one), it announces a change of everything, so that the other nodes
// forget what they cached.
func (p *Presence) heartbeat() {
	t := time.NewTicker(p.cfg.Heartbeat)
	defer t.Stop()
	for first := true; ; first = false {
		if err := p.register(); err != nil {
			p.log.Warn("presence heartbeat", "node", p.cfg.Node, "err", err)
		}
		if !first { // Add wrote the entries of a node just started
			if err := p.refresh(); err != nil {
				p.log.Warn("presence heartbeat", "node", p.cfg.Node, "err", err)
			}
		}
		select {
		case <-p.stop:
			return
		case <-t.C:
		}
	}
}

// registerNode creates the epoch marker KEYS[2] (with Redis's time) if it
// is missing and keeps it 3 × ARGV[2] ms, refreshes a node's score in
// KEYS[1] (presence:nodes) to now + ARGV[2] ms and removes the nodes whose score has passed with their
// entries: ARGV[1] is the node, ARGV[3] starts the user keys, ARGV[4] the
// node keys; it announces "" on ARGV[5] when it reaped any, and returns
// Redis's time (Unix ms), then them. "Now" is Redis's clock, the same for every node, so a node whose
// clock is off is never reaped for it.
var registerNode = goredis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('SET', KEYS[2], now, 'NX')
redis.call('PEXPIRE', KEYS[2], 3 * tonumber(ARGV[2]))
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[1])
local dead = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)
for _, node in ipairs(dead) do
  local nk = ARGV[4] .. node
  for _, u in ipairs(redis.call('SMEMBERS', nk)) do redis.call('ZREM', ARGV[3] .. u, node) end
  redis.call('DEL', nk)
  redis.call('ZREM', KEYS[1], node)
end
if #dead > 0 then redis.call('PUBLISH', ARGV[5], '') end
table.insert(dead, 1, tostring(now))
return dead`)

// register refreshes this node's score in presence:nodes and reaps the
// nodes whose score has passed.
func (p *Presence) register() error {
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Heartbeat)
	defer cancel()
	sent := time.Now()
	out, err := registerNode.Run(ctx, p.rdb, []string{p.nodesKey, p.epochKey}, p.cfg.Node, p.cfg.TTL.Milliseconds(),
		p.cfg.Prefix+"presence:u:", p.cfg.Prefix+"presence:n:", p.channel).StringSlice()
	p.m.count(err)
	if err != nil {
		return unavailable("presence register", err)
	}
	if len(out) == 0 {
		return unavailable("presence register", errors.New("no time in the reply"))
	}
	if redisNow, err := strconv.ParseInt(out[0], 10, 64); err == nil {
		// Redis read its clock about half-way through the round trip.
		mid := sent.Add(time.Since(sent) / 2)
		p.offset.Store(redisNow - mid.UnixMilli())
	}
	dead := out[1:]
	if len(dead) > 0 {
		p.m.reaped.Add(float64(len(dead)))
		p.log.Warn("presence: nodes stopped their heartbeat, dropped their entries", "nodes", dead)
	}
	return nil
}

// refresh rewrites the local entries in chunks of one pipeline each.
func (p *Presence) refresh() error {
	p.mu.Lock()
	users := make([]string, 0, len(p.sessions))
	for u := range p.sessions {
		users = append(users, u)
	}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.Heartbeat)
	defer cancel()
	restored := int64(0)
	for len(users) > 0 {
		chunk := users[:min(len(users), 1000)]
		users = users[len(chunk):]
		var added []*goredis.IntCmd
		_, err := p.rdb.Pipelined(ctx, func(pipe goredis.Pipeliner) error {
			added = p.queueRefresh(ctx, pipe, chunk)
			return nil
		})
		p.m.count(err)
		if err != nil {
			return unavailable("presence heartbeat", err)
		}
		for i, c := range added {
			if c.Val() == 1 && p.restore(ctx, chunk[i]) {
				restored++
			}
		}
	}
	p.m.heartbeats.Inc()
	if restored > 0 {
		p.m.restored.Add(float64(restored))
		if p.cfg.OnReset != nil {
			p.cfg.OnReset()
		}
		return unavailable("presence announce", p.rdb.Publish(ctx, p.channel, "").Err())
	}
	return nil
}

// restore settles an entry the heartbeat found missing and wrote again:
// true if the user still has a session here (the entry had been lost: a
// flush, a DropNode); false if their last session ended while the
// heartbeat ran, in which case the entry it wrote is removed again rather
// than announced.
func (p *Presence) restore(ctx context.Context, userID string) bool {
	st := p.stripe(userID)
	st.Lock()
	defer st.Unlock()
	p.mu.Lock()
	open := p.sessions[userID] > 0
	p.mu.Unlock()
	if open {
		return true
	}
	if err := p.removeEntry(ctx, userID, false); err != nil {
		p.log.Warn("presence heartbeat: remove an entry written back", "user", userID, "err", err)
	}
	return false
}

// listen passes the change notifications to the hook. A (re)subscription
// means notifications may have been missed: the hook hears "" then.
func (p *Presence) listen() {
	ctx := context.Background()
	failed := false // a receive failed since the last subscription
	for {
		msg, err := p.pubsub.Receive(ctx)
		select {
		case <-p.stop:
			return
		default:
		}
		if err != nil {
			// Nothing to announce yet: the routes cached before the
			// failure stay the best guess while Redis is away. The
			// subscription confirmed again after it (below) announces
			// everything, for what was missed meanwhile.
			failed = true
			select {
			case <-p.stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		switch msg := msg.(type) {
		case *goredis.Subscription:
			if failed && p.cfg.OnReset != nil {
				p.cfg.OnReset()
			}
			failed = false
			p.cfg.OnChange("")
		case *goredis.Message:
			p.cfg.OnChange(msg.Payload)
		}
	}
}
