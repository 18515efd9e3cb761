package redis

import (
	"context"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// The scripts that change the hot data; see HotStore for why each is safe
// when the nodes' changes arrive in any order.
var (
	// scriptPopulate: KEYS[1] a hash, KEYS[2] its generation; ARGV[1] the
	// generation the load saw ("" for none), ARGV[2] the TTL in ms, then
	// field, value pairs. Installs them only if the generation has not
	// moved and the hash is absent.
	scriptPopulate = goredis.NewScript(`
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then return 0 end
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
for i = 3, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i+1]) end
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`)

	// scriptInvalidate: KEYS[1] a hash, KEYS[2] its generation; ARGV[1] the
	// TTL in ms. Deletes the hash and moves the generation.
	scriptInvalidate = goredis.NewScript(`
redis.call('DEL', KEYS[1])
redis.call('INCR', KEYS[2])
redis.call('PEXPIRE', KEYS[2], ARGV[1])
return 1`)

	// scriptRaise: KEYS[1] a user's memberships, KEYS[2] their generation;
	// ARGV[1] a room, ARGV[2] a read seq, ARGV[3] the TTL in ms. Raises the
	// room's read position if the user is a member; when the hash is absent
	// it moves the generation instead, so that a load in flight, which may
	// have read the older position, is not installed.
	scriptRaise = goredis.NewScript(`
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return 0
end
local old = redis.call('HGET', KEYS[1], ARGV[1])
if old and tonumber(old) < tonumber(ARGV[2]) then
  redis.call('HSET', KEYS[1], ARGV[1], ARGV[2])
end
return 1`)

	// scriptLast: KEYS[1] a room's last message; ARGV[1] its seq, ARGV[2]
	// the value, ARGV[3] the TTL in ms. Keeps the higher seq.
	scriptLast = goredis.NewScript(`
local old = redis.call('HGET', KEYS[1], 's')
if (not old) or tonumber(old) < tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 's', ARGV[1], 'v', ARGV[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`)

	// scriptWindow: KEYS[1] a room's window; ARGV[1] "1" to create it when
	// absent, ARGV[2] the TTL in ms, ARGV[3] how many messages it keeps,
	// then seq, message pairs (seq 0 is the start marker). Adds each seq
	// not present yet and keeps the newest.
	scriptWindow = goredis.NewScript(`
if ARGV[1] ~= '1' and redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
for i = 4, #ARGV, 2 do
  if #redis.call('ZRANGEBYSCORE', KEYS[1], ARGV[i], ARGV[i], 'LIMIT', 0, 1) == 0 then
    redis.call('ZADD', KEYS[1], ARGV[i], ARGV[i+1])
  end
end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, -(tonumber(ARGV[3]) + 2))
redis.call('PEXPIRE', KEYS[1], ARGV[2])
return 1`)
)

// Apply brings the hot data up to date with committed events. Install it
// as the inner store's OnCommit sink on every node: it runs on the store's
// writer, after the commit and before the writes return, so a write that
// returned is visible to every node's reads. It makes one round trip (a
// pipeline of scripts) per batch, bounded by HotConfig.Timeout; a failure
// is logged, and the invalidations of joins and leaves are retried in the
// background until they succeed (or Close), so that a membership answered
// from Redis is wrong no longer than Redis is unreachable (plus the retry
// pause, at most 5 s).
func (h *HotStore) Apply(events []parley.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
	defer cancel()
	ttl := h.ttlArg()
	pipe := h.rdb.Pipeline()
	var msgs map[string][]parley.Message // per room, for one window script each
	var rooms []string                   // msgs' keys in order
	var inv [][2]string                  // the invalidations: a key and its generation
	for i := range events {
		ev := &events[i]
		room := ev.Room.ID
		inv = h.applyPeople(ctx, pipe, ev, ttl, inv) // member listings, roles, room info (hotmembers.go)
		switch ev.Kind {
		case parley.EventJoin, parley.EventLeave:
			inv = append(inv, [2]string{h.roomKey(room), h.roomGen(room)}, [2]string{h.userKey(ev.UserID), h.userGen(ev.UserID)})
			for _, kg := range inv[len(inv)-2:] {
				scriptInvalidate.Eval(ctx, pipe, kg[:], ttl)
			}
		case parley.EventRead:
			scriptRaise.Eval(ctx, pipe, []string{h.userKey(ev.UserID), h.userGen(ev.UserID)},
				room, strconv.FormatInt(ev.ReadSeq, 10), ttl)
		case parley.EventMessage:
			m := ev.Message
			seq := strconv.FormatInt(m.Seq, 10)
			scriptLast.Eval(ctx, pipe, []string{h.lastKey(room)}, seq, encodeLast(&m, ev.Room.LastActivityAt), ttl)
			scriptRaise.Eval(ctx, pipe, []string{h.userKey(m.SenderID), h.userGen(m.SenderID)}, room, seq, ttl)
			if msgs == nil {
				msgs = map[string][]parley.Message{}
			}
			if _, ok := msgs[room]; !ok {
				rooms = append(rooms, room)
			}
			msgs[room] = append(msgs[room], m)
		}
	}
	for _, room := range rooms {
		scriptWindow.Eval(ctx, pipe, []string{h.windowKey(room)}, h.windowArgs(false, msgs[room])...)
	}
	if pipe.Len() == 0 {
		return
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		h.warn("apply", err)
		if len(inv) > 0 {
			h.retryLater(inv)
		}
	}
}

// retryLater adds invalidations to the set the retry goroutine runs
// until they succeed; the goroutine starts with the first failure.
func (h *HotStore) retryLater(inv [][2]string) {
	h.rmu.Lock()
	if h.pending == nil {
		h.pending = map[[2]string]bool{}
		h.kick = make(chan struct{}, 1)
		h.retries.Go(h.retryLoop)
	}
	for _, kg := range inv {
		h.pending[kg] = true
	}
	h.rmu.Unlock()
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// retryLoop runs the pending invalidations, all in one pipeline, with a
// growing pause while they fail, until Close; then it tries once more.
// They are idempotent: running one twice only moves its generation twice.
func (h *HotStore) retryLoop() {
	pause := 100 * time.Millisecond
	for {
		select {
		case <-h.stop:
			h.invalidatePending()
			return
		case <-h.kick:
		case <-time.After(pause):
		}
		if h.invalidatePending() {
			pause = 100 * time.Millisecond
		} else {
			pause = min(2*pause, 5*time.Second)
		}
	}
}

// invalidatePending runs the pending invalidations; true when none is
// left pending.
func (h *HotStore) invalidatePending() bool {
	h.rmu.Lock()
	batch := make([][2]string, 0, len(h.pending))
	for kg := range h.pending {
		batch = append(batch, kg)
	}
	h.rmu.Unlock()
	if len(batch) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), h.cfg.Timeout)
	defer cancel()
	pipe := h.rdb.Pipeline()
	for _, kg := range batch {
		scriptInvalidate.Eval(ctx, pipe, kg[:], h.ttlArg())
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		return false
	}
	h.m.retried.Add(float64(len(batch)))
	h.rmu.Lock()
	for _, kg := range batch {
		delete(h.pending, kg)
	}
	left := len(h.pending)
	h.rmu.Unlock()
	return left == 0
}

// Close closes the inner store, then stops the retry of invalidations
// after one last attempt, and the revocation listener.
func (h *HotStore) Close() error {
	err := h.Store.Close() // no Apply after this
	h.stopOnce.Do(func() { close(h.stop) })
	h.retries.Wait()
	h.stopRevocations()
	return err
}
