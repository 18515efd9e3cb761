package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"parley"
	"parley/cache"
	"parley/chat"
	"parley/cluster"
	"parley/dirlock"
	"parley/gateway"
	"parley/history"
	"parley/hub"
	"parley/postgres"
	"parley/sqlite"
	"parley/stomp"

	goredis "github.com/redis/go-redis/v9"
)

// openStore opens the durable store, where commits happen: PostgreSQL in
// cluster mode, else SQLite in the data directory, which it locks
// (m.lock). The store calls onCommit after each commit, and PostgreSQL
// calls before with the rooms of a batch's message changes before it
// runs (the hot data's Intend).
func (m *Main) openStore(ctx context.Context, onCommit parley.EventSink, before func(rooms map[string]int) func(bool)) (parley.Store, error) {
	cfg := m.Config
	switch {
	case isPostgres(cfg.Store):
		db, err := postgres.Open(ctx, postgres.Config{URL: cfg.Store, OnCommit: onCommit, BeforeChanges: before, Registerer: m.registry,
			Writers: cfg.PGWriters, SearchBatch: cfg.SearchBatch})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		return db, nil
	case cfg.Store == "":
		if err := os.MkdirAll(cfg.Data, 0o750); err != nil {
			return nil, fmt.Errorf("data directory: %w", err)
		}
		// One process at a time: a second server's commits would be
		// invisible to the first one's caches.
		var err error
		if m.lock, err = dirlock.Acquire(cfg.Data); err != nil {
			return nil, fmt.Errorf("data directory: %w: is another parley serve or migrate running on it?", err)
		}
		sync, err := sqlite.ParseSync(cfg.Sync)
		if err != nil {
			return nil, err
		}
		db, err := sqlite.Open(ctx, sqlite.Config{
			Path: sqliteFile(cfg.Data), Sync: sync, OnCommit: onCommit, Registerer: m.registry,
			SearchBatch: cfg.SearchBatch,
		})
		if err != nil {
			return nil, fmt.Errorf("open store: %w", err)
		}
		return db, nil
	default:
		return nil, fmt.Errorf("--store %q: want empty (SQLite) or postgres://…", cfg.Store)
	}
}

// hotLayer is the hot-data layer in front of the durable store, kept
// current by its Apply, the first commit callback.
type hotLayer interface {
	parley.Store
	Apply(events []parley.Event)
}

// readPath is the stores in front of the durable one, from the bottom up:
// each reads through the one before it.
type readPath struct {
	// hot is the hot-data layer: cache.Store (memory) on one node,
	// redis.HotStore (shared in Redis) in cluster mode. It is m.store,
	// the layer Close closes, which closes the durable store under it.
	hot hotLayer
	// reads is what the services read: the history cache in front of hot
	// when --cache-history-mib is set, else hot itself.
	reads parley.Store
	// changes is the history cache's Apply, which forgets the blocks that
	// edits and deletions change; nil without the history cache.
	changes parley.EventSink
	// written is how far hot has written this node's commits to Redis, in
	// cluster mode: the relay publishes a commit once it is there.
	written cluster.Watermark
	// intend and recoverGone are the hot data's Intend and RecoverGone in
	// cluster mode (redis/hotdirty.go), nil on one node.
	intend      func(rooms map[string]int) func(bool)
	recoverGone func(live []string)
}

// openReadPath puts the hot-data layer and the history cache in front of
// db. In cluster mode it also dials Redis and returns its client, which
// openFanout hands to the cluster node (Close closes it, m.rdb, if Open
// fails before).
func (m *Main) openReadPath(ctx context.Context, clustered bool, db parley.Store, endSessions func(userID string, tokenHash []byte)) (readPath, *goredis.Client, error) {
	cfg := m.Config
	var rp readPath
	var rdb *goredis.Client // cluster mode's Redis, owned by m.cluster once it opens
	if clustered {
		// Every node keeps the shared hot data in Redis current with its
		// own commits, and reads what all the nodes wrote.
		var err error
		if rdb, err = dialRedis(ctx, cfg); err != nil {
			return rp, nil, fmt.Errorf("cluster: %w", err)
		}
		m.rdb = rdb
		h := openHot(cfg, db, rdb, m.registry, endSessions)
		rp.hot, rp.written, rp.intend, rp.recoverGone = h, h, h.Intend, h.RecoverGone
		// What an earlier process of this node's id may have left
		// unwritten, before this one commits anything: this one's own
		// announcements would take those rooms back (redis/hotdirty.go).
		rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = h.RecoverNode(rctx, cfg.NodeID)
		cancel()
		if err != nil {
			m.store = h // Close closes it, and the store under it
			return rp, nil, fmt.Errorf("cluster: recover what this node's last run left unwritten in Redis: %w", err)
		}
	} else {
		// The in-memory cache is kept current by this node's commits only,
		// so it fronts the store only when no other node writes to it.
		// So is its search index: in cluster mode searches go to the store.
		search := int64(cfg.CacheSearch) << 20
		if cfg.CacheSearch <= 0 {
			search = -1 // off
		}
		rp.hot = cache.New(db, cache.Config{RecentMessages: cfg.CacheRecent, SearchBytes: search, Registerer: m.registry})
	}
	rp.reads = rp.hot
	if cfg.CacheHistory > 0 {
		// Every node keeps its own copy of older pages. In cluster mode
		// it checks them against the room's change number, which every
		// node's commits keep in Redis, as well as hearing the relayed
		// changes: a relay may never come from a node that died.
		h := history.New(rp.hot, history.Config{MaxBytes: cfg.CacheHistory << 20, Registerer: m.registry, Shared: clustered})
		rp.reads, rp.changes = h, h.Apply
	}
	return rp, rdb, nil
}

// openFanout makes the hub (m.hub) and, in cluster mode, the cluster node
// (m.cluster, which takes over rdb). It returns the fan-out's commit
// callback, and the gateway's Sessions hook (nil on one node).
func (m *Main) openFanout(clustered bool, rdb *goredis.Client, rp readPath) (parley.EventSink, gateway.Sessions, error) {
	reads := rp.reads
	m.hub = hub.New(hub.Config{Members: reads, Registerer: m.registry})
	m.openEvents(clustered, reads)
	if !clustered {
		return m.hub.Apply, nil, nil
	}
	var err error
	m.rdb = nil // the cluster node owns it from now on, also on failure
	if m.cluster, err = openCluster(m.Config, rdb, reads, rp, m.hub, m.events, m.registry); err != nil {
		return nil, nil, fmt.Errorf("cluster: %w", err)
	}
	return m.cluster.relay.Apply, m.cluster, nil
}

// openGateway makes the STOMP gateway (m.gateway).
func (m *Main) openGateway(svc *chat.Service, sessions gateway.Sessions) error {
	cfg := m.Config
	var origins []string
	for _, o := range strings.Split(cfg.AllowedOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			origins = append(origins, o)
		}
	}
	var onPresence func(string) // one node: the gateway knows every session
	if m.cluster == nil {
		onPresence = m.events.PresenceChanged
	}
	gcfg := gateway.Config{
		Chat: svc, Hub: m.hub, AllowedOrigins: origins,
		HeartBeat: stomp.HeartBeat{Send: cfg.StompHeartBeat, Receive: cfg.StompHeartBeat},
		SendRate:  cfg.StompSendRate, SendBurst: int(2 * cfg.StompSendRate), QueueFrames: cfg.StompQueue,
		FrameTimeout: cfg.StompFrameTimeout, MaxHeartBeat: cfg.StompMaxHeartBeat,
		MaxConnsPerUser: cfg.StompMaxUserConns, MaxConns: cfg.StompMaxConns, SendBuffer: cfg.StompSendBuffer,
		MaxSubscriptions: cfg.StompMaxSubs, MaxHeaders: cfg.StompMaxHeaders, WriteDelay: cfg.StompWriteDelay, PackWebSocket: cfg.StompWSPack,
		Writers: cfg.StompWriters,
		Server:  "parley/" + version, Registerer: m.registry, Sessions: sessions,
		Events: m.events, OnPresence: onPresence,
	}
	if m.cluster != nil {
		m.shareGatewayLimits(&gcfg) // limits.go
	}
	var err error
	if m.gateway, err = gateway.New(gcfg); err != nil {
		return fmt.Errorf("stomp gateway: %w", err)
	}
	return nil
}

// sqliteFile is the embedded SQLite store's database file in the data
// directory data: the one file serve, migrate, backup and restore name.
func sqliteFile(data string) string { return filepath.Join(data, "parley.db") }
