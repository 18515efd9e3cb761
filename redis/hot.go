package redis

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// HotConfig configures a HotStore. Zero fields take the documented
// defaults.
type HotConfig struct {
	// Prefix starts every key. Default DefaultPrefix.
	Prefix string
	// RecentMessages is how many of each room's newest messages are kept,
	// so that history pages within them are served from Redis.
	// Default parley.MaxPageLimit.
	RecentMessages int
	// TTL is the life of every key. The keys that events keep exact (last
	// message, newest messages) are refreshed by each write; the keys that
	// events invalidate (room info, memberships) live one TTL from their
	// load, which bounds how long a lost invalidation can serve stale data.
	// Default 10 minutes.
	TTL time.Duration
	// Timeout bounds the applier's round trip to Redis (and so how long a
	// write, a read or the relay waits for it), a revocation's publish
	// and the wait for every node's acknowledgement of it, and how long
	// NewHotStore waits for the revocation subscription. Default 2 s.
	Timeout time.Duration
	// Health, when not nil, puts a breaker on rdb (NewHealth, with this
	// config), which the HotStore closes: while it holds Redis down
	// nothing waits for Redis (Await returns at once; every call on rdb,
	// the presence's and the relay's too, fails at once, so reads go to
	// the inner store), and when Redis answers again the hot data
	// recovers (recoverRedis) before Redis is marked up. Without it a
	// hung Redis costs each wait up to Timeout.
	Health *HealthConfig
	// Logger logs Redis failures. Default slog.Default().
	Logger *slog.Logger
	// Registerer receives parley_hot_requests_total (hits and misses by
	// kind) and parley_token_revocations_total when not nil.
	Registerer prometheus.Registerer
	// Node is this node's id in cluster mode: with it, the changes this
	// node commits are announced first (Intend) and the rooms of those it
	// leaves unwritten are recovered (hotdirty.go).
	Node string
	// OnRevoke, when set, hears every token revocation of any node
	// (this one's too): the token hash of userID, or with hash nil all
	// of userID's tokens, forgotten here already. It runs on the
	// subscription's goroutine, so it must not block (see revoke.go).
	OnRevoke func(userID string, hash []byte)
}

// HotStore is the shared hot data of cluster mode: a parley.Store that
// wraps the PostgreSQL store and serves room info, each room's last message,
// its newest history page and the room list from Redis, which every node
// reads and keeps current, and each membership from the user's memberships
// (member.go), so that the check every room request makes stays off
// PostgreSQL too, and each room's member listing (hotmembers.go). Writes,
// a room's member ids (the relay keeps its own) and older pages go to the
// inner store. parley_hot_requests_total counts
// hits and misses by kind.
//
// # Keys
//
// Under "{prefix}hot:": "r:{room}" the room info (hash, field v), "l:{room}"
// the last message (hash: s its seq, v the message and the room's last
// activity), "w:{room}" the newest messages (sorted set scored by seq, at
// most RecentMessages of them, plus the member "0" at score 0 when the
// window reaches the start of the room), "u:{user}" the user's rooms, read
// positions, joined times and roles (hash room -> read seq, "j:{room}" ->
// joined Unix µs, "o:{room}" -> role, plus the field "_" so that no rooms
// is a value), "m:{room}" the room's member listing (hotmembers.go), and
// "n:{room}" the room's newest message written while "l:{room}" was absent
// (hash s, v as l:; scriptLast), "g:r:{room}", "g:u:{user}", "g:m:{room}"
// the generations that guard the
// loads of r:, u: and m:, "g:w:{room}" the one that guards the loads of
// w: and l: (hotedits.go), and "g:n:{user}" the user's notify generation,
// which keys each node's memo of their mention counts and levels
// (hotnotify.go), and "dirty:{node}" (room -> the number of its last
// announced change not taken back) with the set "dirty-nodes"
// (hotdirty.go). Token revocations
// (revoke.go) use the channel
// "{prefix}revoked", the stream "{prefix}revocations" and the short-lived
// acknowledgement lists "{prefix}revoked:{id}".
//
// # Several nodes
//
// Every node writes its own commits (Apply, the store's OnCommit sink,
// queues them for the applier goroutine: hotapply.go), and the writes of
// this store return once theirs is written, so a write that returned is in
// Redis for every node; this node's reads from Redis first wait for the
// commits queued when they began, so a session that heard of a commit of
// this node reads it; and the cluster relay publishes a commit to the other
// nodes once it is written (Mark, Await). But the commits of two nodes
// reach Redis in any order. Nothing may therefore go backwards when an
// older change arrives late:
//
//   - Messages are immutable and numbered: the last message and the window
//     change only through Lua scripts that keep the higher seq, so their
//     order does not matter, and that never create either key: once it is
//     gone (dropped, or past its TTL) only a load from the store brings it
//     back, so a late write cannot put back an older version of what
//     replaced it. A send that finds the last message gone keeps itself
//     aside ("n:{room}"), and a load stores the newer of its snapshot and
//     that message, so that a load in flight whose snapshot lacks the send
//     neither loses it nor is refused. A window read checks that its seqs are
//     contiguous and that its top is at least the last message's seq, so a
//     window loaded from an older snapshot, or missing a message whose
//     apply failed, is a miss (and reloaded), never a wrong page.
//   - A room's member_count goes up and down, with no number to order the
//     changes by. A join or leave therefore deletes the room info and
//     increments the room's generation; a load reads the generation before
//     it asks PostgreSQL and installs its snapshot only if the generation
//     has not moved and the key is still absent (one Lua script). A change
//     committed after the snapshot moves the generation first, so a stale
//     snapshot is never installed. A change of title or capacity
//     invalidates it the same way. Messages do not touch room info; a
//     room's last_seq and last_activity_at are the higher of the info's and
//     the last message's.
//   - A user's memberships are invalidated the same way on their joins and
//     leaves; read positions only move forward, so reads and the sender's
//     own messages raise a position with a compare in Lua, and when the key
//     is absent they move the generation, so a load that began before them
//     does not install an older position.
//
// If Redis is unreachable reads fall back to the inner store and the
// applier logs the failure (each round trip ends at HotConfig.Timeout, and
// the waits for it with it), replays what the write owed with the next one
// (hotowed.go: a quiet room's newest messages and changes are not left
// behind) and retries the invalidations of joins and
// leaves in the background; while one is lost, member counts and memberships may be
// stale (a member who left may still pass a membership check; one who
// joined never fails it: a negative answer is confirmed by the inner
// store), for at most one TTL.
//
// A Redis that hangs rather than fails (nothing answers) is the breaker's
// (HotConfig.Health, health.go): once it marks Redis down nothing here
// waits for it, every Redis call fails at once (reads go to the inner
// store, writes are owed), and before Redis is marked up again the
// applier runs the pending invalidations and replays what is owed, so
// that what a spell left stale in Redis is not read as truth after it. A
// message committed during the spell and heard of on another node may
// still be missing from that node's Redis reads until this node has
// replayed it; so may everything this node wrote while only it could not
// reach Redis.
type HotStore struct {
	parley.Store // the inner store: writes and everything not cached

	rdb *goredis.Client
	cfg HotConfig
	log *slog.Logger
	m   hotMetrics
	acc accounts // this node's users and tokens (accounts.go)
	hl  *Health  // the breaker (HotConfig.Health), or nil
	rv  revoker  // the revocations between nodes (revoke.go)

	notify notifyMemo // each user's last mention counts and levels (hotnotify.go)

	retries  sync.WaitGroup // the retry goroutine (retryLoop), once started
	stop     chan struct{}  // closed by Close: the retries end
	stopOnce sync.Once

	rmu     sync.Mutex         // guards the following fields
	pending map[[2]string]bool // invalidations to retry: a key and its generation
	kick    chan struct{}      // wakes the retry goroutine (cap 1)
	owed    *owed              // what failed writes owe, replayed by the next (hotowed.go)

	replayDue atomic.Bool // the retry goroutine asks the applier to replay owed

	// The applier (hotapply.go): Apply queues, applyLoop writes.
	queued     atomic.Uint64   // the mark of the newest batch queued; moved under amu
	written    atomic.Uint64   // every batch through this mark is written (or failed); moved under wmu
	awake      chan struct{}   // wakes the applier (cap 1)
	recovering chan recoverReq // Health's recovery step for the applier
	applied    chan struct{}   // closed when the applier has returned (after Close)

	okMark  uint64  // the applier's: every batch through it is in Redis
	intents intents // this node's announced changes (hotdirty.go)

	amu    sync.Mutex       // guards the following field
	aqueue [][]parley.Event // the batches queued for the applier, in commit order

	wmu sync.Mutex    // guards the following field, and the moves of written
	wch chan struct{} // closed (and replaced) when written moves
}

var _ parley.Store = (*HotStore)(nil)

// NewHotStore returns a HotStore over inner on Redis client rdb, which the
// caller closes after it. Install its Apply as the inner store's OnCommit
// sink on every node. It returns once it hears other nodes' token
// revocations, or after Timeout if Redis does not confirm that.
func NewHotStore(inner parley.Store, rdb *goredis.Client, cfg HotConfig) *HotStore {
	cfg = cfg.withKeyDefaults()
	if cfg.RecentMessages <= 0 {
		cfg.RecentMessages = parley.MaxPageLimit
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 2 * time.Second
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	h := &HotStore{Store: inner, rdb: rdb, cfg: cfg, log: cfg.Logger, m: newHotMetrics(cfg.Registerer), stop: make(chan struct{}),
		awake: make(chan struct{}, 1), recovering: make(chan recoverReq), applied: make(chan struct{}), wch: make(chan struct{})}
	if cfg.Health != nil {
		h.hl = NewHealth(rdb, *cfg.Health)
		h.hl.OnRecover(h.recoverRedis)
	}
	go h.applyLoop()
	h.startRevocations(cfg.Registerer)
	return h
}

func (h *HotStore) roomKey(id string) string   { return h.cfg.Prefix + "hot:r:" + id }
func (h *HotStore) roomGen(id string) string   { return h.cfg.Prefix + "hot:g:r:" + id }
func (h *HotStore) lastKey(id string) string   { return h.cfg.Prefix + "hot:l:" + id }
func (h *HotStore) asideKey(id string) string  { return h.cfg.Prefix + "hot:n:" + id }
func (h *HotStore) windowKey(id string) string { return h.cfg.Prefix + "hot:w:" + id }
func (h *HotStore) userKey(id string) string   { return h.cfg.Prefix + "hot:u:" + id }
func (h *HotStore) userGen(id string) string   { return h.cfg.Prefix + "hot:g:u:" + id }
func (h *HotStore) ttlArg() string             { return strconv.FormatInt(h.cfg.TTL.Milliseconds(), 10) }

// warn logs a Redis failure, but not the calls refused while Redis is
// down: Health logs the spell once.
func (h *HotStore) warn(op string, err error) {
	if !errors.Is(err, ErrDown) {
		h.log.Warn("redis hot data", "op", op, "err", err)
	}
}
func genOf(cmd *goredis.StringCmd) (string, bool) {
	return cmd.Val(), cmd.Err() == nil || isNil(cmd.Err())
}

// roomJSON is the stored form of a room (parley.Room's JSON leaves fields
// out).
type roomJSON struct {
	ID             string    `json:"id"`
	Kind           string    `json:"k"`
	Title          string    `json:"t"`
	Capacity       int       `json:"c"`
	MemberCount    int       `json:"n"`
	LastSeq        int64     `json:"s"`
	LastChange     int64     `json:"lc,omitempty"`
	LastActivityAt time.Time `json:"a"`
	// RetentionSeconds is left out at 0, so a room stored before it
	// decodes alike.
	RetentionSeconds int64     `json:"rt,omitempty"`
	CreatedAt        time.Time `json:"ca"`
	DirectKey        string    `json:"d,omitempty"`
}

// lastJSON is the stored form of a room's last message and the room's last
// activity after it; Message is nil in a room without messages.
type lastJSON struct {
	Message        *parley.Message `json:"m,omitempty"`
	LastActivityAt time.Time       `json:"a"`
}

func encodeRoom(r parley.Room) string {
	b, _ := json.Marshal(roomJSON(r))
	return string(b)
}

func decodeRoom(s string) (parley.Room, bool) {
	var r roomJSON
	if err := json.Unmarshal([]byte(s), &r); err != nil || r.ID == "" {
		return parley.Room{}, false
	}
	return parley.Room(r), true
}

func encodeLast(m *parley.Message, activity time.Time) string {
	b, _ := json.Marshal(lastJSON{Message: m, LastActivityAt: activity})
	return string(b)
}

func decodeLast(s string) (lastJSON, bool) {
	var l lastJSON
	if err := json.Unmarshal([]byte(s), &l); err != nil {
		return l, false
	}
	return l, true
}

// hotRoom is what Redis holds of one room for a room list or Room.
type hotRoom struct {
	room     parley.Room
	last     *parley.Message
	haveRoom bool
	haveLast bool
}

// merge returns the room with its last seq and activity raised to the last
// message's, and the last message; ok is false when the last message is
// missing or behind the info (a load must fill it).
func (hr hotRoom) merge(l lastJSON) (parley.Room, *parley.Message, bool) {
	r := hr.room
	seq := int64(0)
	if l.Message != nil {
		seq = l.Message.Seq
	}
	if seq < r.LastSeq {
		return r, nil, false
	}
	r.LastSeq = seq
	if l.LastActivityAt.After(r.LastActivityAt) {
		r.LastActivityAt = l.LastActivityAt
	}
	return r, l.Message, true
}

// getRooms reads the info and last message of rooms ids in one pipeline,
// loading what is missing from the inner store. A room that does not exist
// is left out of the result (nil entry) with no error.
func (h *HotStore) getRooms(ctx context.Context, ids []string) ([]*parley.RoomEntry, error) {
	pipe := h.rdb.Pipeline()
	infos := make([]*goredis.StringCmd, len(ids))
	lasts := make([]*goredis.StringCmd, len(ids))
	gens := make([]*goredis.StringCmd, len(ids))
	for i, id := range ids {
		infos[i] = pipe.HGet(ctx, h.roomKey(id), "v")
		lasts[i] = pipe.HGet(ctx, h.lastKey(id), "v")
		gens[i] = pipe.Get(ctx, h.roomGen(id))
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		h.warn("read rooms", err)
	}
	out := make([]*parley.RoomEntry, len(ids))
	for i, id := range ids {
		var info parley.Room
		haveInfo := false
		if infos[i].Err() == nil {
			info, haveInfo = decodeRoom(infos[i].Val())
		}
		gen, genOK := genOf(gens[i])
		if haveInfo {
			h.m.hit(kindRoom)
		} else {
			h.m.miss(kindRoom)
			r, err := h.Store.Room(ctx, id)
			if parley.ErrorCode(err) == parley.CodeNotFound {
				continue
			}
			if err != nil {
				return nil, err
			}
			info = r
			if genOK {
				h.populate(ctx, h.roomKey(id), h.roomGen(id), gen, "v", encodeRoom(r))
			}
		}
		var l lastJSON
		haveLast := false
		if lasts[i].Err() == nil {
			l, haveLast = decodeLast(lasts[i].Val())
		}
		room, last, ok := hotRoom{room: info}.merge(l)
		if haveLast && ok {
			h.m.hit(kindLast)
		} else {
			h.m.miss(kindLast)
			var err error
			if room, last, err = h.loadLast(ctx, id); err != nil {
				if parley.ErrorCode(err) == parley.CodeNotFound {
					continue
				}
				return nil, err
			}
		}
		out[i] = &parley.RoomEntry{Room: room, LastMessage: last}
	}
	return out, nil
}

// loadLast reads a room and its last message from the inner store and
// stores the last message if no newer one is stored and the window's
// generation has not moved since before the reads: a change that drops
// the last message (a thread root's edit, a stopped node's recovery)
// moves it, so a snapshot taken before that change is not stored
// (TestHotStoreLoadBeforeForget).
func (h *HotStore) loadLast(ctx context.Context, id string) (parley.Room, *parley.Message, error) {
	gen, genOK := h.readWindowGen(ctx, id)
	r, err := h.Store.Room(ctx, id)
	if err != nil {
		return r, nil, err
	}
	var last *parley.Message
	if r.LastSeq > 0 {
		msgs, err := h.Store.Messages(ctx, id, parley.Newest(1))
		if err != nil {
			return r, nil, err
		}
		if len(msgs) == 0 || msgs[0].Seq < r.LastSeq {
			return r, nil, nil
		}
		last = &msgs[0]
		if last.Seq > r.LastSeq {
			// Committed between the two reads, after the generation was
			// read as well: the room as of the second read. (Not storing
			// it left the key to the send's own write, which does not
			// create it: in a busy room every load missed.)
			r.LastSeq = last.Seq
			if last.SentAt.After(r.LastActivityAt) {
				r.LastActivityAt = last.SentAt
			}
		}
	}
	if !genOK {
		return r, last, nil
	}
	h.storeLoadedLast(ctx, id, gen, r.LastSeq, last, r.LastActivityAt)
	return r, last, nil
}

// populate installs field=value in the hash key if the generation is still
// gen and the key absent.
func (h *HotStore) populate(ctx context.Context, key, genKey, gen string, fieldValues ...string) {
	args := make([]any, 0, 2+len(fieldValues))
	args = append(args, gen, h.ttlArg())
	for _, s := range fieldValues {
		args = append(args, s)
	}
	if err := scriptPopulate.Eval(ctx, h.rdb, []string{key, genKey}, args...).Err(); err != nil && !isNil(err) {
		h.warn("populate", err)
	}
}

// Room implements parley.Store from Redis, loading a missing part from the
// inner store.
func (h *HotStore) Room(ctx context.Context, id string) (parley.Room, error) {
	h.caughtUp(ctx)
	es, err := h.getRooms(ctx, []string{id})
	if err != nil {
		return parley.Room{}, err
	}
	if es[0] == nil {
		return parley.Room{}, parley.Errorf(parley.CodeNotFound, "room not found")
	}
	return es[0].Room, nil
}

// withKeyDefaults fills the fields that name and age the hot data's keys
// (Prefix, TTL): what NewHotStore and ForgetHot share.
func (c HotConfig) withKeyDefaults() HotConfig {
	if c.Prefix == "" {
		c.Prefix = DefaultPrefix
	}
	if c.TTL <= 0 {
		c.TTL = 10 * time.Minute
	}
	return c
}

// WaitIndexed waits for the inner store's search index, when it trails
// the commit (parley.IndexWaiter).
func (h *HotStore) WaitIndexed(ctx context.Context) error { return parley.WaitIndexed(ctx, h.Store) }
