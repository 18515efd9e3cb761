package redis

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// Revocations in cluster mode: every node keeps the tokens it has read in
// its own memory (accounts.go), so a token revoked on one node must be
// forgotten by all of them at once. The node that revokes publishes a
// revocation on the channel "{prefix}revoked" after PostgreSQL has
// committed it; every node (itself included) subscribes, forgets the token
// (or all of the user's tokens), calls HotConfig.OnRevoke, which ends the
// live sessions they opened, and acknowledges. The revoking node returns
// once every subscription PUBLISH reached has acknowledged (or after
// Timeout, logged and counted): from then on no node accepts the token,
// and every session it opened has been refused.
//
// No node ever accepts a revoked token from memory once the revocation has
// returned to its caller:
//
//   - A load that read the token from PostgreSQL before the revocation
//     committed installs it only if no revocation (and no loss of the
//     subscription) has been applied since the load began; the message
//     arrives after the commit, so it either finds the entry and drops it,
//     or the load sees the count moved and installs nothing.
//   - Pub/sub is fire and forget: a node whose subscription is down misses
//     messages. From the moment it sees the fault until Redis confirms the
//     new subscription, the node serves tokens from PostgreSQL only, and it
//     drops its whole token memory on both edges (cheap to refill). A
//     subscription that is silent for revokePing is pinged; without an
//     answer within another revokePing it counts as lost.
//   - So that the sessions a missed revocation should end end too, each
//     revocation is also appended to the stream "{prefix}revocations"
//     (the newest maxStreamRevocations), in the same script as its
//     publish, and the message carries its stream id. A node that
//     subscribes again replays the stream after the last id it saw
//     (forgetting again is harmless). What this cannot replay is a stream
//     that Redis itself lost (a restart without persistence).
//   - A publish that fails is retried, in the listener, every revokePing at
//     most, until it goes through or the store closes: meanwhile a node
//     that still hears Redis but missed the message may accept the token.
//     That is the one window this leaves, and it needs this node to lose
//     Redis while the others keep it.

// revokePing is how long a silent subscription waits before it pings,
// and how long it then waits for any answer.
const revokePing = 5 * time.Second

// maxStreamRevocations bounds the stream of recent revocations (roughly:
// Redis trims it in whole nodes).
const maxStreamRevocations = 10_000

// scriptRevoke: KEYS[1] the stream of recent revocations; ARGV[1] a
// revocation (JSON), ARGV[2] the channel, ARGV[3] the stream's bound.
// Appends the revocation to the stream and publishes "{stream id}
// {revocation}"; returns how many subscriptions received it.
var scriptRevoke = goredis.NewScript(`
local id = redis.call('XADD', KEYS[1], 'MAXLEN', '~', ARGV[3], '*', 'r', ARGV[1])
return redis.call('PUBLISH', ARGV[2], id .. ' ' .. ARGV[1])
`)

// revocation is a message on the channel: the token hash of user User, or
// with Hash empty all of User's tokens. A node that has applied it pushes
// its acknowledgement on the list "{prefix}revoked:{ID}", for which the
// publisher waits.
type revocation struct {
	ID   string `json:"id"`
	User string `json:"user"`
	Hash []byte `json:"hash,omitempty"`
}

// revoker is the listener's state, part of HotStore.
type revoker struct {
	done       sync.WaitGroup // the listener goroutine
	subscribed chan struct{}  // closed at the first confirmed subscription
	metrics    *prometheus.CounterVec

	mu      sync.Mutex      // guards the following fields
	ps      *goredis.PubSub // the listener's current subscription; nil between them
	stopped bool            // Close has begun: no new subscription
	pending []revocation    // publishes to retry, oldest first
}

// maxPendingRevocations bounds the publishes kept for retry; past it the
// oldest go (and are counted as lost).
const maxPendingRevocations = 10_000

func (h *HotStore) revokedChannel() string { return h.cfg.Prefix + "revoked" }
func (h *HotStore) revokedStream() string  { return h.cfg.Prefix + "revocations" }

// startRevocations starts the listener and waits, at most the store's
// Timeout, for its subscription: until then tokens are read from
// PostgreSQL only.
func (h *HotStore) startRevocations(reg prometheus.Registerer) {
	h.rv.subscribed = make(chan struct{})
	h.rv.metrics = registerCounterVec(reg, prometheus.CounterOpts{
		Name: "parley_token_revocations_total",
		Help: "Token revocations between nodes, by event: published, retried (published after a failure), lost (dropped from a full retry queue), unacknowledged (a node that received one did not confirm it in time), received (applied here, live or replayed from the stream), and resync (this node's subscription was lost: its token memory dropped).",
	}, "event")
	for _, ev := range []string{"published", "retried", "lost", "unacknowledged", "received", "resync"} {
		h.rv.metrics.WithLabelValues(ev)
	}
	h.rv.done.Go(h.listenRevocations)
	select {
	case <-h.rv.subscribed:
	case <-time.After(h.cfg.Timeout):
		h.log.Warn("redis: revocation subscription not confirmed yet; tokens come from PostgreSQL until it is", "channel", h.revokedChannel())
	}
}

// stopRevocations ends the listener and waits for it.
func (h *HotStore) stopRevocations() {
	h.rv.mu.Lock()
	h.rv.stopped = true
	if h.rv.ps != nil {
		h.rv.ps.Close() // wakes the listener's receive
	}
	h.rv.mu.Unlock()
	h.rv.done.Wait()
}

// publishRevocation tells every node of r and waits, at most the store's
// Timeout, until each has applied it; or, when Redis cannot take it,
// queues it for the listener to retry.
func (h *HotStore) publishRevocation(ctx context.Context, r revocation) {
	r.ID = parley.NewID()
	n, err := h.publish(ctx, r)
	if err != nil {
		h.log.Warn("redis: publish revocation; retrying", "user", r.User, "err", err)
		h.rv.mu.Lock()
		if len(h.rv.pending) >= maxPendingRevocations {
			h.rv.pending = h.rv.pending[1:]
			h.rv.metrics.WithLabelValues("lost").Inc()
		}
		h.rv.pending = append(h.rv.pending, r)
		h.rv.mu.Unlock()
		return
	}
	h.rv.metrics.WithLabelValues("published").Inc()
	// PUBLISH counts the subscriptions it reached; each acknowledges once
	// it has applied the revocation, so that when this returns no node
	// serves the token from memory.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.Timeout)
	defer cancel()
	for acked := int64(0); acked < n; acked++ {
		if err := h.rdb.BLPop(ctx, h.cfg.Timeout, h.ackKey(r.ID)).Err(); err != nil {
			h.rv.metrics.WithLabelValues("unacknowledged").Add(float64(n - acked))
			h.log.Warn("redis: revocation not acknowledged by every node", "user", r.User, "nodes", n, "acknowledged", acked, "err", err)
			return
		}
	}
}

func (h *HotStore) ackKey(id string) string { return h.cfg.Prefix + "revoked:" + id }

// publish appends r to the stream, publishes it, and returns how many
// subscriptions received it.
func (h *HotStore) publish(ctx context.Context, r revocation) (int64, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.Timeout)
	defer cancel()
	return scriptRevoke.Run(ctx, h.rdb, []string{h.revokedStream()}, b, h.revokedChannel(), maxStreamRevocations).Int64()
}

// acknowledge tells the publisher of r that this node has applied it.
func (h *HotStore) acknowledge(r revocation) {
	if r.ID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
	defer cancel()
	pipe := h.rdb.Pipeline()
	pipe.RPush(ctx, h.ackKey(r.ID), "1")
	pipe.PExpire(ctx, h.ackKey(r.ID), 2*h.cfg.Timeout)
	if _, err := pipe.Exec(ctx); err != nil {
		h.log.Warn("redis: acknowledge revocation", "user", r.User, "err", err)
	}
}

// retryPublishes publishes the queued revocations, oldest first, until one
// fails.
func (h *HotStore) retryPublishes() {
	for {
		h.rv.mu.Lock()
		if len(h.rv.pending) == 0 {
			h.rv.mu.Unlock()
			return
		}
		r := h.rv.pending[0]
		h.rv.mu.Unlock()
		if _, err := h.publish(context.Background(), r); err != nil {
			return
		}
		h.rv.metrics.WithLabelValues("retried").Inc()
		h.rv.mu.Lock()
		if len(h.rv.pending) > 0 {
			h.rv.pending = h.rv.pending[1:]
		}
		h.rv.mu.Unlock()
	}
}

// listenRevocations subscribes to the channel and applies what arrives,
// subscribing again (after a pause) whenever the subscription fails, until
// stopRevocations.
func (h *HotStore) listenRevocations() {
	pause := 50 * time.Millisecond
	seen := "" // the stream id of the last revocation applied; "" before the first subscription
	lost := false
	for {
		ps := h.rdb.Subscribe(context.Background(), h.revokedChannel()) // may wait to dial: not under mu
		h.rv.mu.Lock()
		if h.rv.stopped {
			h.rv.mu.Unlock()
			ps.Close()
			return
		}
		h.rv.ps = ps
		h.rv.mu.Unlock()

		confirmed := h.receiveRevocations(ps, &seen)

		h.rv.mu.Lock()
		h.rv.ps = nil
		stopped := h.rv.stopped
		h.rv.mu.Unlock()
		ps.Close()
		h.trustTokens(false)
		if stopped {
			return
		}
		if confirmed || !lost { // log and count each loss once, not each attempt
			h.rv.metrics.WithLabelValues("resync").Inc()
			h.log.Warn("redis: revocation subscription lost; tokens come from PostgreSQL until it is back", "channel", h.revokedChannel())
		}
		lost = true
		if confirmed {
			pause = 50 * time.Millisecond
		} else {
			pause = min(2*pause, revokePing)
		}
		select {
		case <-h.stop:
			return
		case <-time.After(pause):
		}
	}
}

// receiveRevocations applies the messages of one subscription until it
// fails or is closed, and reports whether Redis had confirmed it. seen is
// the stream id of the last revocation applied: once the subscription is
// confirmed, what the stream holds after it is replayed (on the first
// subscription, seen only starts at the stream's end: nothing before it
// can concern this node).
func (h *HotStore) receiveRevocations(ps *goredis.PubSub, seen *string) (confirmed bool) {
	ctx := context.Background()
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(ctx, revokePing)
		var ne net.Error
		switch {
		case err != nil && errors.As(err, &ne) && ne.Timeout() && !pinged:
			if err := ps.Ping(ctx); err != nil {
				return confirmed
			}
			pinged = true
			continue
		case err != nil:
			return confirmed
		}
		pinged = false
		switch m := msg.(type) {
		case *goredis.Subscription:
			if m.Kind != "subscribe" {
				continue
			}
			// Anything published before now may be missed: start over.
			h.trustTokens(true)
			if err := h.replayRevocations(seen); err != nil {
				h.log.Warn("redis: replay revocations", "err", err)
				return confirmed
			}
			if !confirmed {
				confirmed = true
				select {
				case <-h.rv.subscribed:
				default:
					close(h.rv.subscribed)
				}
			}
		case *goredis.Message:
			id, payload, _ := strings.Cut(m.Payload, " ")
			if r, ok := h.applyRevocation(payload); ok {
				if streamAfter(id, *seen) {
					*seen = id
				}
				h.acknowledge(r)
			}
		}
		if confirmed {
			h.retryPublishes()
		}
	}
}

// applyRevocation forgets the tokens of a revocation (JSON) and calls
// OnRevoke.
func (h *HotStore) applyRevocation(payload string) (revocation, bool) {
	var r revocation
	if err := json.Unmarshal([]byte(payload), &r); err != nil || r.User == "" {
		h.log.Warn("redis: malformed revocation", "payload", payload, "err", err)
		return r, false
	}
	h.rv.metrics.WithLabelValues("received").Inc()
	var hash []byte
	if len(r.Hash) > 0 {
		hash = r.Hash
	}
	h.forgetTokens(r.User, hash)
	if f := h.cfg.OnRevoke; f != nil {
		f(r.User, hash)
	}
	return r, true
}

// replayRevocations applies the revocations the stream holds after *seen
// and moves *seen to the last; with *seen empty (the first subscription)
// it only moves *seen to the stream's end.
func (h *HotStore) replayRevocations(seen *string) error {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
	defer cancel()
	if *seen == "" {
		last, err := h.rdb.XRevRangeN(ctx, h.revokedStream(), "+", "-", 1).Result()
		if err != nil {
			return err
		}
		*seen = "0-0"
		if len(last) > 0 {
			*seen = last[0].ID
		}
		return nil
	}
	for {
		entries, err := h.rdb.XRangeN(ctx, h.revokedStream(), "("+*seen, "+", 1000).Result()
		if err != nil {
			return err
		}
		for _, e := range entries {
			if payload, ok := e.Values["r"].(string); ok {
				h.applyRevocation(payload)
			}
			*seen = e.ID
		}
		if len(entries) < 1000 {
			return nil
		}
	}
}

// streamAfter reports whether stream id a ("ms-seq") comes after b; an id
// that does not parse comes after nothing.
func streamAfter(a, b string) bool {
	am, as, ok := parseStreamID(a)
	if !ok {
		return false
	}
	bm, bs, ok := parseStreamID(b)
	return !ok || am > bm || am == bm && as > bs
}

func parseStreamID(id string) (ms, seq uint64, ok bool) {
	m, q, found := strings.Cut(id, "-")
	ms, err1 := strconv.ParseUint(m, 10, 64)
	seq, err2 := strconv.ParseUint(q, 10, 64)
	return ms, seq, found && err1 == nil && err2 == nil
}

// registerCounterVec registers a counter vector on reg (when not nil), or
// returns the one registered already under its name.
func registerCounterVec(reg prometheus.Registerer, opts prometheus.CounterOpts, labels ...string) *prometheus.CounterVec {
	vec := prometheus.NewCounterVec(opts, labels)
	if reg == nil {
		return vec
	}
	if err := reg.Register(vec); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			panic("redis: register " + opts.Name + ": " + err.Error())
		}
		return are.ExistingCollector.(*prometheus.CounterVec)
	}
	return vec
}
