package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"parley"
	"parley/cluster"
	"parley/hub"
	"parley/rabbitmq"
	"parley/redis"
	"parley/roomevents"
)

// clusterNode is the cluster side of a node (design §6): the relay between
// the store's commits, the local hub and the other nodes, the RabbitMQ
// broker and the Redis presence (the shared hot data, redis.HotStore, is
// the node's store, on the same client). It is the gateway's Sessions
// hook, so that a user is present on this node while one of their
// sessions is.
type clusterNode struct {
	node     string
	rdb      *goredis.Client
	presence *redis.Presence
	broker   *rabbitmq.Broker
	relay    *cluster.Relay
}

// clustered reports whether cfg asks for cluster mode, and checks that it
// names everything cluster mode needs.
func (c *Config) clustered() (bool, error) {
	if c.Broker == "" && c.Redis == "" {
		return false, nil
	}
	if c.Broker == "" || c.Redis == "" || !isPostgres(c.Store) {
		return false, errors.New("cluster mode needs --store postgres://…, --broker amqp://… and --redis redis://… together")
	}
	return true, nil
}

func isPostgres(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

// defaultNodeID is the host name and the port of the listen address; a
// port chosen by the system (0) gets a random suffix instead.
func defaultNodeID(addr string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "parley"
	}
	_, port, _ := net.SplitHostPort(addr)
	if port == "" || port == "0" {
		port = parley.NewID()[:6]
	}
	return host + "-" + port
}

// dialRedis connects to the Redis of cluster mode.
func dialRedis(ctx context.Context, cfg Config) (*goredis.Client, error) {
	opt, err := goredis.ParseURL(cfg.Redis)
	if err != nil {
		return nil, fmt.Errorf("redis url: %w", err)
	}
	// Every call's context bounds its wait: a Redis that accepts and never
	// answers must not hold a caller (a commit's hot-data write, a /readyz
	// check) past its deadline.
	opt.ContextTimeoutEnabled = true
	rdb := goredis.NewClient(opt)
	pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := rdb.Ping(pctx).Err(); err != nil {
		rdb.Close()
		return nil, fmt.Errorf("redis: %w", err)
	}
	return rdb, nil
}

// openHot puts the shared hot data in Redis (redis.HotStore) in front of
// the PostgreSQL store. Its Apply must be installed as a sink of db;
// onRevoke hears every node's token revocations. It puts the breaker on
// rdb (redis.Health, its defaults: a ping every 250 ms, down after 1 s
// unanswered), so that a hung Redis stops no call of the node's, the
// presence's and the relay's included, for longer than that.
func openHot(cfg Config, db parley.Store, rdb *goredis.Client, reg prometheus.Registerer, onRevoke func(userID string, tokenHash []byte)) *redis.HotStore {
	return redis.NewHotStore(db, rdb, redis.HotConfig{Prefix: cfg.RedisPrefix, Node: cfg.NodeID, Registerer: reg, OnRevoke: onRevoke,
		Health: &redis.HealthConfig{Registerer: reg}})
}

// openCluster connects to RabbitMQ and starts the relay, with rdb (from
// dialRedis, which the node owns from now on, also on failure) for
// presence. The relay's Apply must be installed as a sink of the store,
// after the hot data's (written), whose writes to Redis the relay's
// publishes wait for; events is the node's room events. rp.changes, when
// not nil, takes the edits and deletions of every node (the history
// cache's Apply), and rp.recoverGone each listing of the live nodes.
func openCluster(cfg Config, rdb *goredis.Client, store parley.Store, rp readPath, h *hub.Hub, events *roomevents.Events, reg prometheus.Registerer) (*clusterNode, error) {
	node := cfg.NodeID // chosen by Open
	c := &clusterNode{node: node, rdb: rdb}
	var err error
	ttl := cfg.PresenceTTL
	if ttl <= 0 {
		ttl = 15 * time.Second // redis.PresenceConfig's default
	}
	c.relay = cluster.New(cluster.Config{
		Node: node, Store: store, Local: h, ApplyLeaves: h.Apply, ApplyChanges: rp.changes, Registerer: reg, OnLiveNodes: rp.recoverGone,
		Heads: redis.NewHeads(rdb, cfg.RedisPrefix), HeadCheck: cfg.HeadCheck,
		Nodes: liveNodes{c}, Settle: ttl/3 + time.Second, // one heartbeat, and its round trip
		Subscribed: hubRooms{h}, Written: rp.written, Events: events.ApplyRemote,
	})
	c.broker, err = rabbitmq.New(rabbitmq.Config{
		URL: cfg.Broker, Node: node, Handler: c.relay.Receive, Gone: c.relay.Gone, OnConnect: c.relay.CheckHeads,
		Prefetch: cfg.Prefetch, Registerer: reg,
	})
	if err != nil {
		c.rdb.Close()
		return nil, err
	}
	c.presence = redis.NewPresence(redis.PresenceConfig{
		Client: c.rdb, Prefix: cfg.RedisPrefix, Node: node, TTL: cfg.PresenceTTL,
		OnChange: func(userID string) {
			c.relay.PresenceChanged(userID)
			events.PresenceChanged(userID) // every node makes its own online and offline events
		},
		OnReset: c.relay.PresenceReset, Registerer: reg,
	})
	c.relay.Start(c.broker, c.presence)
	c.awaitBroker(10 * time.Second)
	return c, nil
}

// liveNodes lists the live nodes from the node's presence, which is made
// after the relay (its change hook is the relay's) and before the relay
// starts.
type liveNodes struct{ c *clusterNode }

func (l liveNodes) LiveNodes(ctx context.Context) ([]string, error) {
	return l.c.presence.LiveNodes(ctx)
}

// hubRooms is the hub's room positions as the relay's Subscribed: a head
// check also covers the subscribed rooms the relay has never delivered.
type hubRooms struct{ h *hub.Hub }

func (s hubRooms) SubscribedRooms() map[string]cluster.Position {
	rooms := s.h.Rooms()
	out := make(map[string]cluster.Position, len(rooms))
	for room, p := range rooms {
		out[room] = cluster.Position{Low: p.Low, High: p.High}
	}
	return out
}

func (s hubRooms) SubscribedRoom(roomID string) (cluster.Position, bool) {
	p, ok := s.h.Room(roomID)
	return cluster.Position{Low: p.Low, High: p.High}, ok
}

// awaitBroker waits, at most d, until this node's queue is bound: before
// that, batches other nodes send here come back unroutable and would drop
// this node's presence. A node that cannot reach RabbitMQ still starts and
// serves its local sessions; the broker reconnects on its own.
func (c *clusterNode) awaitBroker(d time.Duration) {
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err := c.broker.Ping(ctx)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			slog.Warn("starting without RabbitMQ; it reconnects in the background", "node", c.node, "err", err)
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Opened records the user's session in presence (gateway.Sessions). A
// Redis failure does not refuse the session: the heartbeat registers it
// once Redis is back.
func (c *clusterNode) Opened(ctx context.Context, userID string) {
	if err := c.presence.Add(ctx, userID); err != nil {
		slog.Warn("presence add", "user", userID, "err", err)
	}
}

// Closed ends the user's session in presence (gateway.Sessions).
func (c *clusterNode) Closed(userID string) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := c.presence.Remove(ctx, userID); err != nil {
		slog.Warn("presence remove", "user", userID, "err", err)
	}
}

// checks are the cluster's dependencies for /readyz: the broker and Redis.
func (c *clusterNode) checks() []readyCheck {
	return []readyCheck{{"broker", c.broker.Ping}, {"redis", c.presence.Ping}}
}

// Close stops the relay after what the store has committed, then the
// broker (after its unconfirmed batches, and its Gone calls, which drop a
// node's presence in Redis), then presence (removing this node's entries)
// and the Redis client. The store must be closed first, and the gateway
// shut down (its Sessions.Closed calls, which use presence, are over).
func (c *clusterNode) Close() error {
	c.relay.Close()
	errs := []error{c.broker.Close(), c.presence.Close(), c.rdb.Close()}
	return errors.Join(errs...)
}
