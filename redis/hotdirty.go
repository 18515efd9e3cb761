package redis

import (
	"context"
	"slices"
	"sync"
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
// So before a batch that changes messages runs (postgres.Config's
// BeforeChanges), the node announces its rooms in
// "{prefix}hot:dirty:{node}" (Intend: room -> the announcement's number,
// which only grows within a process), and lists itself in
// "{prefix}hot:dirty-nodes". The
// node keeps each announcement in memory (intents) until its batch's
// outcome is known and, if it committed, until the applier has written
// to Redis everything queued up to the batch's events (a successful write
// through its mark: a write that failed is owed, and replayed by the next
// one that succeeds). A room with no announcement left leaves the hash,
// unless a newer announcement landed meanwhile (scriptUndirty compares
// the numbers, and is idempotent: a pipeline sent twice takes nothing
// twice). Only the applier's goroutine does those round trips (done).
//
// What a node leaves in its hash when it stops is undone by RecoverNode:
// each room listed loses its room info, last message and window (with
// their generations moved, so that no load of the window, the last
// message or the room info in flight stores an older snapshot), and the next read loads them
// from the store. A node recovers what its previous process left as it
// starts, before it commits anything, and does not start if it cannot
// (cmd/parley): its own announcements would take those rooms back, the
// numbers starting again. The live nodes recover a node's once presence,
// sure of its listing, no longer names it (RecoverGone, from the cluster
// relay's keeper). A batch whose outcome is unknown (its COMMIT's answer
// was lost) keeps its rooms listed for good, which only costs them a
// reload then.
//
// Intend is best effort: while the breaker holds Redis down, or when its
// round trip fails, the batch runs unannounced (its rooms stay counted in
// memory all the same, so no later write takes back an announcement it
// did not make), and a death before its write is not repaired. After the
// recovery neither a load in flight (loadLast checks the window's
// generation) nor another node's late write (no write creates the last
// message or the window) stores an older version of the room's messages.
// Nor is a change whose write the owed set dropped past maxOwed (logged)
// repaired. Sends are not announced: a dead node's unwritten message is
// only late (the room's next message reloads the window), but its
// sender's read position, which the message moved, stays behind in the
// sender's memberships "u:{user}" until their next read or send in the
// room or the key's TTL, so their room list counts those messages unread.
// Recovering a node that presence stops listing while it is alive (a
// pause longer than the presence TTL) costs reloads, and leaves its
// changes in flight unannounced.

// dirtyTTL is the life of a node's dirty hash after its last
// announcement: past it, a node dead that long and never recovered (no
// node listed the live ones meanwhile) is forgotten.
const dirtyTTL = 24 * time.Hour

var (
	// scriptIntend: KEYS[1] a node's dirty hash, KEYS[2] the dirty nodes;
	// ARGV[1] the node, ARGV[2] the announcement's number, ARGV[3] the
	// TTL in ms, then rooms. Each room keeps the highest number.
	scriptIntend = goredis.NewScript(`
for i = 4, #ARGV do
  local old = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0')
  if old < tonumber(ARGV[2]) then redis.call('HSET', KEYS[1], ARGV[i], ARGV[2]) end
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
redis.call('SADD', KEYS[2], ARGV[1])
return 1`)

	// scriptClean: KEYS[1] a node's dirty hash, KEYS[2] the dirty nodes;
	// ARGV[1] the node, then room, number pairs. Drops each room still at
	// a number no higher, and the node from the set once its hash is
	// empty. Idempotent.
	scriptClean = goredis.NewScript(`
for i = 2, #ARGV, 2 do
  local n = redis.call('HGET', KEYS[1], ARGV[i])
  if n and tonumber(n) <= tonumber(ARGV[i+1]) then redis.call('HDEL', KEYS[1], ARGV[i]) end
end
if redis.call('HLEN', KEYS[1]) == 0 then redis.call('SREM', KEYS[2], ARGV[1]) end
return 1`)
)

// intents are this node's announcements (Intend) not yet done with.
type intents struct {
	mu    sync.Mutex        // guards the following fields
	n     uint64            // the last announcement's number
	rooms map[string]int    // room -> its announcements not done with
	top   map[string]uint64 // room -> its last announcement's number
	due   []*intent         // decided, waiting for their mark to be written
}

// intent is one announcement: its number and rooms and, once its batch
// committed, the applier's mark that covers its events (0 for a batch
// that committed nothing).
type intent struct {
	n     uint64
	rooms []string
	mark  uint64
}

func (h *HotStore) dirtyKey(node string) string { return h.cfg.Prefix + "hot:dirty:" + node }
func (h *HotStore) dirtyNodes() string          { return h.cfg.Prefix + "hot:dirty-nodes" }

// Intend announces changes of stored messages about to commit, by room
// (postgres.Config.BeforeChanges), and returns what the store calls with
// the batch's outcome. It does nothing without HotConfig.Node; while the
// breaker holds Redis down it only counts the rooms in memory, else it
// waits for one round trip, at most HotConfig.Timeout.
func (h *HotStore) Intend(rooms map[string]int) func(committed bool) {
	if h.cfg.Node == "" || len(rooms) == 0 {
		return func(bool) {}
	}
	in := &h.intents
	in.mu.Lock()
	in.n++
	it := &intent{n: in.n, rooms: make([]string, 0, len(rooms))}
	if in.rooms == nil {
		in.rooms, in.top = map[string]int{}, map[string]uint64{}
	}
	for room := range rooms {
		it.rooms = append(it.rooms, room)
		in.rooms[room]++
		in.top[room] = it.n
	}
	in.mu.Unlock()
	if h.hl.Up() {
		ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
		args := make([]any, 0, 3+len(it.rooms))
		args = append(args, h.cfg.Node, it.n, dirtyTTL.Milliseconds())
		for _, room := range it.rooms {
			args = append(args, room)
		}
		if err := scriptIntend.Run(ctx, h.rdb, []string{h.dirtyKey(h.cfg.Node), h.dirtyNodes()}, args...).Err(); err != nil && !isNil(err) {
			h.warn("announce changes", err)
		}
		cancel()
	}
	return func(committed bool) { h.decided(it, committed) }
}

// decided takes an announcement's outcome: done once the applier has
// written what its batch committed (the events queued by now), or at
// once if nothing committed. It may run under the store's commit order
// (postgres sequencer.mu): it does no I/O, and wakes the applier, which
// takes the rooms back (done).
func (h *HotStore) decided(it *intent, committed bool) {
	in := &h.intents
	in.mu.Lock()
	if committed {
		it.mark = h.queued.Load()
	}
	in.due = append(in.due, it)
	in.mu.Unlock()
	select {
	case h.awake <- struct{}{}:
	default:
	}
}

// done takes back, on the applier's goroutine, the announcements whose
// marks are written (ok: every batch through it is in Redis): a room with
// none left leaves this node's dirty hash. What fails stays listed, which
// only costs a reload after a death.
func (h *HotStore) done(ctx context.Context, ok uint64) {
	in := &h.intents
	in.mu.Lock()
	var free []any // room, number pairs
	keep := in.due[:0]
	for _, it := range in.due {
		if it.mark > ok {
			keep = append(keep, it)
			continue
		}
		for _, room := range it.rooms {
			if in.rooms[room]--; in.rooms[room] <= 0 {
				free = append(free, room, in.top[room])
				delete(in.rooms, room)
				delete(in.top, room)
			}
		}
	}
	clear(in.due[len(keep):])
	in.due = keep
	in.mu.Unlock()
	if len(free) == 0 || !h.hl.Up() {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, h.cfg.Timeout)
	defer cancel()
	args := append([]any{h.cfg.Node}, free...)
	if err := scriptClean.Run(ctx, h.rdb, []string{h.dirtyKey(h.cfg.Node), h.dirtyNodes()}, args...).Err(); err != nil && !isNil(err) {
		h.warn("take back announced changes", err)
	}
}

// RecoverNode drops the room info, last message and window of every room
// that node announced and may not have written (see above), then its
// announcements. Call it for this node's id before the node commits
// anything (what an earlier process of the same id left), and for a node
// that is gone (RecoverGone).
func (h *HotStore) RecoverNode(ctx context.Context, node string) error {
	key := h.dirtyKey(node)
	rooms, err := h.rdb.HGetAll(ctx, key).Result()
	if err != nil || len(rooms) == 0 {
		if err == nil {
			err = h.rdb.SRem(ctx, h.dirtyNodes(), node).Err()
		}
		return err
	}
	ttl := h.ttlArg()
	pipe := h.rdb.Pipeline()
	args := make([]any, 0, 1+2*len(rooms))
	args = append(args, node)
	for room, n := range rooms {
		scriptInvalidate.Eval(ctx, pipe, []string{h.roomKey(room), h.roomGen(room)}, ttl)
		h.forgetWindow(ctx, pipe, room, ttl)
		args = append(args, room, n)
	}
	scriptClean.Eval(ctx, pipe, []string{key, h.dirtyNodes()}, args...)
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return err
	}
	h.log.Warn("redis: dropped the hot data of rooms a stopped node may have left behind", "node", node, "rooms", len(rooms))
	return nil
}

// RecoverGone recovers every node with announced changes that live (the
// cluster's live nodes, as presence lists them when it is sure) does not
// name, but this one. The cluster relay's keeper calls it
// (cluster.Config.OnLiveNodes).
func (h *HotStore) RecoverGone(live []string) {
	if h.cfg.Node == "" || !h.hl.Up() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
	defer cancel()
	nodes, err := h.rdb.SMembers(ctx, h.dirtyNodes()).Result()
	if err != nil {
		h.warn("list nodes with announced changes", err)
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
