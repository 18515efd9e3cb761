package redis

import (
	"context"
	"slices"
	"time"

	goredis "github.com/redis/go-redis/v9"
)

// # Changes a node announced and may not have written
//
// A node writes its commits to Redis after they commit (the applier). A
// node that dies in between leaves the hot data behind its commits. For a
// new message that is only late (the room's next one repairs the last
// message and the window, and delivery reads the store: cluster heads),
// but an edit or a deletion would go on showing the old text, as the
// room's last message and in its window, until the keys' TTL, which the
// room's later writes keep refreshing: deleted would not mean deleted.
//
// So before a batch that changes messages commits (postgres.Config's
// BeforeChanges), the node counts its changes per room in
// "{prefix}hot:dirty:{node}" (Intend), and lists itself in
// "{prefix}hot:dirty-nodes"; each change's write takes its count back, in
// the same pipeline, after the change's own scripts (scriptUndirty). What
// a node leaves counted when it stops is undone by RecoverNode: each room
// counted loses its room info, last message and window (with their
// generations moved, so that no load in flight stores an older snapshot),
// and the next read loads them from the store. A node recovers what its
// previous process left as it starts (cmd/parley), and the live nodes
// recover a node's as soon as presence no longer lists it (RecoverGone,
// from the cluster relay's listing of live nodes). A count left by a write
// that failed (owed, replayed later) or by a change that committed
// nothing (a repeat, a refusal) only costs its room a reload then.
//
// Intend is best effort: while the breaker holds Redis down, or when the
// round trip fails, the change commits unannounced, and a death before
// its write is not repaired (the keys' TTL bounds it only in a quiet
// room). Recovery of a node that presence stops listing while it is alive
// (a pause longer than the presence TTL) costs reloads, never a wrong
// answer.

// dirtyTTL is the life of a node's dirty hash after its last change: past
// it, a node dead that long and never recovered (no node listed the live
// ones meanwhile) is forgotten.
const dirtyTTL = 24 * time.Hour

var (
	// scriptUndirty: KEYS[1] a node's dirty hash; ARGV[1] a room. Takes
	// one count back; at zero the room leaves the hash.
	scriptUndirty = goredis.NewScript(`
local n = redis.call('HINCRBY', KEYS[1], ARGV[1], -1)
if n <= 0 then redis.call('HDEL', KEYS[1], ARGV[1]) end
return n`)

	// scriptClean: KEYS[1] a node's dirty hash, KEYS[2] the dirty nodes;
	// ARGV[1] the node, then rooms. Drops the rooms from the hash, and the
	// node from the set once its hash is empty.
	scriptClean = goredis.NewScript(`
for i = 2, #ARGV do redis.call('HDEL', KEYS[1], ARGV[i]) end
if redis.call('HLEN', KEYS[1]) == 0 then redis.call('SREM', KEYS[2], ARGV[1]) end
return 1`)
)

func (h *HotStore) dirtyKey(node string) string { return h.cfg.Prefix + "hot:dirty:" + node }
func (h *HotStore) dirtyNodes() string          { return h.cfg.Prefix + "hot:dirty-nodes" }

// Intend counts changes of stored messages about to commit, by room
// (postgres.Config.BeforeChanges). It does nothing without
// HotConfig.Node, and returns at once while the breaker holds Redis down;
// else it waits for one round trip, at most HotConfig.Timeout.
func (h *HotStore) Intend(rooms map[string]int) {
	if h.cfg.Node == "" || len(rooms) == 0 || !h.hl.Up() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
	defer cancel()
	key := h.dirtyKey(h.cfg.Node)
	pipe := h.rdb.Pipeline()
	for room, n := range rooms {
		pipe.HIncrBy(ctx, key, room, int64(n))
	}
	pipe.PExpire(ctx, key, dirtyTTL)
	pipe.SAdd(ctx, h.dirtyNodes(), h.cfg.Node)
	if _, err := pipe.Exec(ctx); err != nil {
		h.warn("announce changes", err)
	}
}

// undirty queues the take-back of one change's count in room, after its
// write (write, in the same pipeline).
func (h *HotStore) undirty(ctx context.Context, pipe goredis.Pipeliner, room string) {
	if h.cfg.Node != "" {
		scriptUndirty.Eval(ctx, pipe, []string{h.dirtyKey(h.cfg.Node)}, room)
	}
}

// RecoverNode drops the room info, last message and window of every room
// where node counted a change it may not have written (see above), and
// then its counts. Call it for this node's id before the node commits
// anything (what an earlier process of the same id left), and for a node
// that is gone (RecoverGone).
func (h *HotStore) RecoverNode(ctx context.Context, node string) error {
	key := h.dirtyKey(node)
	rooms, err := h.rdb.HKeys(ctx, key).Result()
	if err != nil || len(rooms) == 0 {
		if err == nil {
			err = h.rdb.SRem(ctx, h.dirtyNodes(), node).Err()
		}
		return err
	}
	ttl := h.ttlArg()
	pipe := h.rdb.Pipeline()
	for _, room := range rooms {
		scriptInvalidate.Eval(ctx, pipe, []string{h.roomKey(room), h.roomGen(room)}, ttl)
		scriptForgetWindow.Eval(ctx, pipe, []string{h.windowKey(room), h.windowGen(room), h.lastKey(room)}, ttl)
	}
	args := make([]any, 0, 1+len(rooms))
	args = append(args, node)
	for _, room := range rooms {
		args = append(args, room)
	}
	scriptClean.Eval(ctx, pipe, []string{key, h.dirtyNodes()}, args...)
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return err
	}
	h.log.Warn("redis: dropped the hot data of rooms a stopped node may have left behind", "node", node, "rooms", len(rooms))
	return nil
}

// RecoverGone recovers every node with counted changes that live (the
// cluster's live nodes, as presence lists them) does not name, but this
// one. The cluster relay calls it with each trustworthy listing
// (cluster.Config.OnLiveNodes).
func (h *HotStore) RecoverGone(live []string) {
	if h.cfg.Node == "" || !h.hl.Up() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
	defer cancel()
	nodes, err := h.rdb.SMembers(ctx, h.dirtyNodes()).Result()
	if err != nil {
		h.warn("list nodes with changes", err)
		return
	}
	for _, node := range nodes {
		if node == h.cfg.Node || slices.Contains(live, node) {
			continue
		}
		if err := h.RecoverNode(ctx, node); err != nil {
			h.warn("recover a stopped node's rooms", err)
			return
		}
	}
}
