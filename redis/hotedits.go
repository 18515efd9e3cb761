package redis

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// Edits and deletions change committed messages, which the hot data holds
// in three places; each follows the change at once, on every node, and
// keeps the newest version whatever order the nodes' applies reach Redis
// in, by the message's change number:
//
//   - the room info "r:{room}" holds last_change: it is invalidated, with
//     its generation, as a join invalidates it;
//   - the last message "l:{room}": the new version replaces a stored one of
//     the same seq and a lower change (scriptLastChange), and is stored
//     over an older seq when the message is the room's last (never where
//     the key is absent: only a load creates it);
//     a load of an older snapshot cannot overwrite it (scriptLastIfGen
//     keeps a stored seq it does not pass), nor store it once a change
//     dropped the key (a thread root's edit, below): the load checks the
//     window's generation;
//   - the window "w:{room}": the new version replaces the member of its seq
//     if that has a lower change, or is added where it lacks it
//     (scriptWindowChange), and the window's generation "g:w:{room}"
//     moves, so that a window loaded from a snapshot taken before the
//     change is not stored (Messages reads the generation before it asks
//     PostgreSQL: storeWindowSince).
//
// So a send's own write that reaches Redis after a change of its message
// (its node's applier was behind, or the write was owed) finds the newer
// version and leaves it (TestHotStoreDeleteOvertakesSend), or finds no key
// and stores nothing (TestHotLastLateAfterRootEdit).
//
// Search and changed_after are not cached: they go to the inner store.

var (
	// scriptLastChange: KEYS[1] a room's last message; ARGV[1] the
	// message's seq, ARGV[2] its change, ARGV[3] the value, ARGV[4] "1"
	// when the message was the room's last at the change's commit, to
	// store it over an older seq: the send's own write (scriptLast) may
	// reach Redis after the change, late or owed, and must then find this
	// version there, or it would bring the old text back
	// (TestHotStoreDeleteOvertakesSend), ARGV[5] the TTL in ms. Stores
	// nothing where the key is absent, as scriptLast (the window's script
	// of the same change moves the generation, so no load in flight
	// stores an older version).
	scriptLastChange = goredis.NewScript(`
local old = redis.call('HGET', KEYS[1], 's')
if not old then return 0 end
if tonumber(old) < tonumber(ARGV[1]) then
  if ARGV[4] ~= '1' then return 0 end
else
  if tonumber(old) ~= tonumber(ARGV[1]) then return 0 end
  local v = cjson.decode(redis.call('HGET', KEYS[1], 'v') or '{}')
  local m = v['m']
  if type(m) == 'table' and (tonumber(m['change']) or 0) >= tonumber(ARGV[2]) then return 0 end
end
redis.call('HSET', KEYS[1], 's', ARGV[1], 'v', ARGV[3])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1`)

	// scriptWindowChange: KEYS[1] a room's window, KEYS[2] its
	// generation; ARGV[1] the seq, ARGV[2] the change, ARGV[3] the
	// message, ARGV[4] the TTL in ms. Replaces the member of that seq if
	// it holds a lower change, and adds it when the window exists but
	// lacks the seq: the send's own write (scriptWindow adds only seqs
	// not present) may come after the change and must find this version
	// there (TestHotStoreDeleteBelowTop). A seq added may leave a hole
	// below it, which readWindow takes as a miss until the late writes
	// fill it, or one below the window's bottom, which the next write
	// trims. Moves the generation either way.
	scriptWindowChange = goredis.NewScript(`
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[4])
local olds = redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1])
for _, old in ipairs(olds) do
  local m = cjson.decode(old)
  if (tonumber(m['change']) or 0) >= tonumber(ARGV[2]) then return 0 end
end
if #olds == 0 and redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('ZREMRANGEBYSCORE', KEYS[1], ARGV[1], ARGV[1])
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[3])
return 1`)

	// scriptWindowIfGen is scriptWindow, run only while the window's
	// generation (KEYS[2]) is ARGV[1] ("" for none); scriptWindow's
	// arguments follow.
	scriptWindowIfGen = goredis.NewScript(`
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then return 0 end
if ARGV[2] ~= '1' and redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 5, #ARGV, 2 do
  if #redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[i], ARGV[i], 'LIMIT', 0, 1) == 0 then
    redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i+1])
  end
end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[4]) + 2))
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`)
)

func (h *HotStore) windowGen(id string) string { return h.cfg.Prefix + "hot:g:w:" + id }

// applyChange queues the scripts of an EventEdited, EventDeleted or
// EventReaction on pipe
// and returns the invalidation to retry if the pipeline fails.
func (h *HotStore) applyChange(ctx context.Context, pipe goredis.Pipeliner, ev *parley.Event, ttl string) [][2]string {
	room, m := ev.Room.ID, &ev.Message
	inv := [][2]string{{h.roomKey(room), h.roomGen(room)}}
	scriptInvalidate.Eval(ctx, pipe, inv[0][:], ttl)
	seq, change := strconv.FormatInt(m.Seq, 10), strconv.FormatInt(m.Change, 10)
	create := "0"
	if ev.Room.LastSeq == m.Seq {
		create = "1"
	}
	scriptLastChange.Eval(ctx, pipe, []string{h.lastKey(room)}, seq, change,
		encodeLast(m, ev.Room.LastActivityAt), create, ttl)
	scriptWindowChange.Eval(ctx, pipe, []string{h.windowKey(room), h.windowGen(room)}, seq, change, encodeMessage(m), ttl)
	if forgetsWindow(ev) {
		// A thread's root changed its text: its replies' excerpts in the
		// window and the last message are stale.
		h.forgetWindow(ctx, pipe, room, ttl)
	}
	return inv
}

// forgetWindow puts on pipe the drop of a room's window and last message:
// the generation moves, so no load from an older snapshot stores them
// again, and no late write creates either (scriptWindow, scriptLast), so
// the next read loads them from the store, as after their TTL.
func (h *HotStore) forgetWindow(ctx context.Context, pipe goredis.Pipeliner, room, ttl string) {
	scriptForgetWindow.Eval(ctx, pipe, []string{h.windowKey(room), h.windowGen(room), h.lastKey(room), h.asideKey(room)}, ttl)
}

// forgetsWindow reports whether a change drops its room's window and last
// message: a thread root's edit or deletion.
func forgetsWindow(ev *parley.Event) bool {
	return ev.Message.Thread != nil && (ev.Kind == parley.EventEdited || ev.Kind == parley.EventDeleted)
}

// scriptForgetWindow: KEYS[1] a room's window, KEYS[2] its generation,
// KEYS[3] its last message, KEYS[4] its newest message aside; ARGV[1] the
// TTL in ms. Drops the window, the last message and the message aside,
// and moves the generation.
var scriptForgetWindow = goredis.NewScript(`
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
redis.call('DEL', KEYS[1], KEYS[3], KEYS[4])
return 1`)

// readWindowGen returns the generation of a room's window ("" for none)
// before a load, and whether it could be read.
func (h *HotStore) readWindowGen(ctx context.Context, roomID string) (string, bool) {
	return genOf(h.rdb.Get(ctx, h.windowGen(roomID)))
}

// storeWindowSince is storeWindow for a load that read gen first: it
// stores nothing if a change moved the generation since.
func (h *HotStore) storeWindowSince(ctx context.Context, roomID string, msgs []parley.Message, complete bool, gen string) {
	args := append([]any{gen}, h.windowArgs(true, msgs)...)
	if complete {
		args = append(args, "0", "0")
	}
	err := scriptWindowIfGen.Eval(ctx, h.rdb, []string{h.windowKey(roomID), h.windowGen(roomID)}, args...).Err()
	if err != nil && !isNil(err) {
		h.warn("store window", err)
	}
}

// storeLastSince stores the newest of msgs, the room's newest page read
// from the store after its window's generation was gen, as the room's
// last message, if none is stored or an older one, and the generation has
// not moved (scriptLastIfGen, as loadLast): no write creates the key
// (scriptLast), and a window read needs it (TestHotLastLoadedWithWindow).
// The last activity stored with it is its send time; the room info holds
// the room's own, and reads take the later of the two.
func (h *HotStore) storeLastSince(ctx context.Context, roomID string, msgs []parley.Message, gen string) {
	if len(msgs) == 0 {
		h.storeLoadedLast(ctx, roomID, gen, 0, nil, time.Time{})
		return
	}
	h.storeLoadedLast(ctx, roomID, gen, msgs[0].Seq, &msgs[0], msgs[0].SentAt)
}

// storeLoadedLast stores a load's snapshot of a room's last message: last
// (nil for none) at seq, with the room's last activity, read from the
// store after the window's generation was gen (scriptLastIfGen). loadLast
// and storeLastSince share it.
func (h *HotStore) storeLoadedLast(ctx context.Context, roomID, gen string, seq int64, last *parley.Message, activity time.Time) {
	err := scriptLastIfGen.Eval(ctx, h.rdb, []string{h.lastKey(roomID), h.windowGen(roomID), h.asideKey(roomID)},
		gen, strconv.FormatInt(seq, 10), encodeLast(last, activity), h.ttlArg()).Err()
	if err != nil && !isNil(err) {
		h.warn("store last message", err)
	}
}

// patchQueued puts the new version of a changed message into the messages
// of its room that this write adds to the window after its scripts (a send
// and its edit in one write): the window must not get the older text.
func patchQueued(queued []parley.Message, m *parley.Message) {
	for i := range queued {
		if queued[i].Seq == m.Seq && queued[i].Change < m.Change {
			queued[i] = *m
		}
	}
}

func encodeMessage(m *parley.Message) string {
	b, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("encode message: %v", err)) // a Message always encodes
	}
	return string(b)
}

// EditMessage implements parley.Store: it returns once the hot data holds
// the edit (as the writes of hotwrites.go do).
func (h *HotStore) EditMessage(ctx context.Context, e parley.Edit) (parley.Message, error) {
	m, err := h.Store.EditMessage(ctx, e)
	if err == nil {
		h.caughtUp(ctx)
	}
	return m, err
}

// DeleteMessage implements parley.Store: it returns once the hot data
// holds the deletion.
func (h *HotStore) DeleteMessage(ctx context.Context, d parley.Deletion) (parley.Message, bool, error) {
	m, deleted, err := h.Store.DeleteMessage(ctx, d)
	if err == nil {
		h.caughtUp(ctx)
	}
	return m, deleted, err
}

// React implements parley.Store: it returns once the hot data holds the
// reaction (the message's new counts), as an edit does.
func (h *HotStore) React(ctx context.Context, r parley.React) (parley.Message, bool, error) {
	m, changed, err := h.Store.React(ctx, r)
	if err == nil && changed {
		h.caughtUp(ctx)
	}
	return m, changed, err
}

// Pin implements parley.Store: it returns once the hot data holds the
// pin (the message's new version), as an edit does.
func (h *HotStore) Pin(ctx context.Context, p parley.PinMessage) (parley.Message, bool, error) {
	m, changed, err := h.Store.Pin(ctx, p)
	if err == nil && changed {
		h.caughtUp(ctx)
	}
	return m, changed, err
}
