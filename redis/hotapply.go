package redis

import (
	"context"
	"errors"
	"slices"
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

	// scriptLast: KEYS[1] a room's last message, KEYS[2] its newest
	// message aside; ARGV[1] its seq, ARGV[2] the value, ARGV[3] the TTL
	// in ms. Keeps the higher seq, and does not create the key: a key
	// dropped (a thread root's edit, a stopped node's recovery, its TTL)
	// comes back only from a load, which reads the store (loadLast), so
	// that no write of an older version that comes late or is replayed (a
	// send, a change of it) can bring back a text replaced since
	// (TestHotLastLateAfterRootEdit). Where the key is absent it keeps the
	// message aside instead (the higher seq), and a load stores the newer
	// of its snapshot and that one (scriptLastIfGen): a load in flight,
	// whose snapshot may lack the message, neither loses it
	// (TestHotLastSendDuringLoad) nor is refused by it, so the key comes
	// back with the first load however fast the sends come
	// (TestHotLastComesBackUnderSends).
	scriptLast = goredis.NewScript(`
local old = redis.call('HGET', KEYS[1], 's')
if not old then
  local aside = redis.call('HGET', KEYS[2], 's')
  if (not aside) or tonumber(aside) < tonumber(ARGV[1]) then
    redis.call('HSET', KEYS[2], 's', ARGV[1], 'v', ARGV[2])
  end
  redis.call('PEXPIRE', KEYS[2], ARGV[3])
  return 0
end
if tonumber(old) < tonumber(ARGV[1]) then
  redis.call('HSET', KEYS[1], 's', ARGV[1], 'v', ARGV[2])
end
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return 1`)

	// scriptLastIfGen stores a load's snapshot of a room's last message:
	// KEYS[1] the last message, KEYS[2] the window's generation, KEYS[3]
	// the newest message kept aside (scriptLast); ARGV[1] the generation
	// the load read before it asked the store ("" for none), ARGV[2] the
	// snapshot's seq, ARGV[3] its value, ARGV[4] the TTL in ms. Runs only
	// while the generation is unchanged (no change or drop since the
	// snapshot), and stores the newer of the snapshot and the message
	// aside, the snapshot on a tie (it read the message's text as the
	// store holds it): one aside with a higher seq committed after the
	// snapshot was read, and a change of it since would have moved the
	// generation. Keeps a stored higher seq.
	scriptLastIfGen = goredis.NewScript(`
if (redis.call('GET', KEYS[2]) or '') ~= ARGV[1] then return 0 end
local seq, v = tonumber(ARGV[2]), ARGV[3]
local aside = redis.call('HGET', KEYS[3], 's')
if aside and tonumber(aside) > seq then
  seq, v = tonumber(aside), redis.call('HGET', KEYS[3], 'v')
end
local old = redis.call('HGET', KEYS[1], 's')
if (not old) or tonumber(old) < seq then
  redis.call('HSET', KEYS[1], 's', seq, 'v', v)
end
redis.call('PEXPIRE', KEYS[1], ARGV[4])
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
// as the inner store's OnCommit sink on every node. It runs on the store's
// writer, under PostgreSQL's sequencer lock, so it does not wait for
// Redis: it queues the batch, with the next mark (Mark), for the applier
// goroutine, which writes the queued batches in commit order, all those
// queued at once in one round trip (a pipeline of scripts), bounded by
// HotConfig.Timeout. Who needs a commit in Redis waits for its mark
// (Await): the writes of this store return once their commit is written,
// so a write that returned is visible to every node's reads; this node's
// reads from Redis first wait for what was queued when they began, so
// they see every commit the node's sessions may have heard of; and the
// cluster relay publishes a commit to other nodes only once it is
// written. A failure is logged and ends the wait all the same (a Redis
// outage delays each of them by one Timeout, two at most, never for
// good):
// the invalidations of joins and leaves are retried in the background
// until they succeed (or Close), so that a membership answered from Redis
// is wrong no longer than Redis is unreachable (plus the retry pause, at
// most 5 s), and what else the write owed (last messages, read positions,
// changes) is replayed by the next write, which the retry goroutine
// starts if none comes (hotowed.go).
func (h *HotStore) Apply(events []parley.Event) {
	h.amu.Lock()
	h.aqueue = append(h.aqueue, slices.Clone(events))
	h.queued.Add(1) // under amu: the marks follow the queue's order
	h.amu.Unlock()
	select {
	case h.awake <- struct{}{}:
	default:
	}
}

// Mark returns the mark of the newest batch Apply has queued: a sink
// installed after Apply (the cluster relay's) gets its own batch's mark.
func (h *HotStore) Mark() uint64 { return h.queued.Load() }

// Await returns once the applier is done with every batch through mark,
// written or failed (each round trip is bounded by HotConfig.Timeout, so
// it waits at most about two of them), or when ctx ends, or at once after
// Close, or at once while the breaker (HotConfig.Health) holds Redis
// down (not up, or recovering): then nothing waits for Redis, the batch
// is written (or owed) later, and the reads of this node go to the inner
// store meanwhile.
func (h *HotStore) Await(ctx context.Context, mark uint64) {
	if h.written.Load() >= mark {
		return
	}
	down := h.hl.Down() // nil without a breaker: never ready
	for h.written.Load() < mark {
		h.wmu.Lock()
		ch, done := h.wch, h.written.Load() >= mark
		h.wmu.Unlock()
		if done {
			return
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return
		case <-down:
			return
		}
	}
}

// caughtUp waits until the batches queued so far are written (Await):
// this node's reads from Redis call it first, and its writes after the
// inner store's.
func (h *HotStore) caughtUp(ctx context.Context) { h.Await(ctx, h.queued.Load()) }

// applyLoop is the applier goroutine, started by NewHotStore: it writes
// what Apply queues, in order, until Close, and then what is left.
func (h *HotStore) applyLoop() {
	defer close(h.applied)
	for {
		select {
		case <-h.awake:
		case req := <-h.recovering:
			req.done <- h.recoverDrain(req.ctx)
			continue
		case <-h.stop:
			h.drain(context.Background())
			return
		}
		h.drain(context.Background())
	}
}

// recoverReq is Health's recovery step handed to the applier: ctx lets
// its calls through while Redis is recovering; done hears the outcome.
type recoverReq struct {
	ctx  context.Context
	done chan error
}

// recoverRedis is the hot data's recovery step (the breaker's): when
// Redis answers again after a spell down, and before any read is served
// from it, the applier runs every pending invalidation (the joins,
// leaves and changes whose invalidations were lost), replays what the
// failed writes owe (last messages, read positions, changes) and writes
// what is queued. The applier does it, so no batch is written between.
func (h *HotStore) recoverRedis(ctx context.Context) error {
	req := recoverReq{ctx: ctx, done: make(chan error, 1)}
	select {
	case h.recovering <- req:
	case <-h.applied:
		return nil // closed
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case err := <-req.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// recoverDrain is recoverRedis on the applier's goroutine.
func (h *HotStore) recoverDrain(ctx context.Context) error {
	if !h.invalidate(ctx) {
		return errors.New("recover hot data: invalidations failed")
	}
	h.replayDue.Store(true)
	if !h.drain(ctx) {
		return errors.New("recover hot data: replay failed")
	}
	return nil
}

// drain writes the queued batches, a round trip for all of those queued
// at once, until the queue is empty, moving the written mark after each;
// each round trip is bounded by HotConfig.Timeout within base. It
// reports whether every write succeeded.
func (h *HotStore) drain(base context.Context) bool {
	ok := true
	replay := h.replayDue.Swap(false)
	for {
		h.amu.Lock()
		batches := h.aqueue
		h.aqueue = nil
		mark := h.queued.Load()
		h.amu.Unlock()
		if len(batches) == 0 {
			if replay {
				ok = h.write(base, nil) && ok // only what failed writes owe (hotowed.go)
			}
			h.done(base, h.okMark) // the announced changes written (hotdirty.go)
			return ok
		}
		replay = false // the write replays it
		if h.write(base, batches) {
			h.okMark = mark // and what failed before: the write replayed it
		} else {
			ok = false
		}
		h.wmu.Lock()
		h.written.Store(mark)
		close(h.wch)
		h.wch = make(chan struct{})
		h.wmu.Unlock()
	}
}

// queueLast puts on pipe the write of m, room's newest message, with the
// room's last activity after it (scriptLast): the applier's and the owed
// replay's (hotowed.go).
func (h *HotStore) queueLast(ctx context.Context, pipe goredis.Pipeliner, room string, m *parley.Message, activity time.Time, ttl string) {
	scriptLast.Eval(ctx, pipe, []string{h.lastKey(room), h.asideKey(room)}, strconv.FormatInt(m.Seq, 10), encodeLast(m, activity), ttl)
}

// write brings the hot data up to date with batches of committed events,
// in commit order, in one round trip: the one place that says what each
// kind of event changes in Redis. It reports whether Redis took it (or
// there was nothing to write).
func (h *HotStore) write(base context.Context, batches [][]parley.Event) bool {
	ctx, cancel := context.WithTimeout(base, h.cfg.Timeout)
	defer cancel()
	ttl := h.ttlArg()
	pipe := h.rdb.Pipeline()
	replay := h.takeOwed() // what earlier failed writes owe, first (hotowed.go)
	if !replay.empty() {
		h.queueOwed(ctx, pipe, replay, ttl)
	}
	var msgs map[string][]parley.Message // per room, for one window script each
	var rooms []string                   // msgs' keys in order
	var inv [][2]string                  // the invalidations: a key and its generation
	for _, events := range batches {
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
				h.moveNotifyGen(ctx, pipe, ev.UserID) // a rejoined room is back at level all (hotnotify.go)
			case parley.EventRead:
				scriptRaise.Eval(ctx, pipe, []string{h.userKey(ev.UserID), h.userGen(ev.UserID)},
					room, strconv.FormatInt(ev.ReadSeq, 10), ttl)
			case parley.EventMessage:
				m := ev.Message
				seq := strconv.FormatInt(m.Seq, 10)
				h.queueLast(ctx, pipe, room, &m, ev.Room.LastActivityAt, ttl)
				scriptRaise.Eval(ctx, pipe, []string{h.userKey(m.SenderID), h.userGen(m.SenderID)}, room, seq, ttl)
				if msgs == nil {
					msgs = map[string][]parley.Message{}
				}
				if _, ok := msgs[room]; !ok {
					rooms = append(rooms, room)
				}
				msgs[room] = append(msgs[room], m)
			case parley.EventEdited, parley.EventDeleted, parley.EventReaction, parley.EventThread, parley.EventPin:
				inv = append(inv, h.applyChange(ctx, pipe, ev, ttl)...)
				patchQueued(msgs[room], &ev.Message)
			}
		}
	}
	for _, room := range rooms {
		ms := msgs[room] // in seq order: the older ones would be cut from the window
		ms = ms[max(0, len(ms)-h.cfg.RecentMessages):]
		scriptWindow.Eval(ctx, pipe, []string{h.windowKey(room)}, h.windowArgs(false, ms)...)
	}
	if pipe.Len() == 0 {
		return true
	}
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		h.warn("apply", err)
		if len(inv) > 0 {
			h.retryLater(inv)
		}
		if replay == nil {
			replay = &owed{}
		}
		replay.add(batches)
		h.oweLater(replay)
		return false
	}
	if !replay.empty() {
		h.m.replayed.Add(float64(len(replay.last) + len(replay.raises) + len(replay.changes) + len(replay.forgets)))
	}
	return true
}

// retryLater adds invalidations to the set the retry goroutine runs
// until they succeed; the goroutine starts with the first failure.
func (h *HotStore) retryLater(inv [][2]string) {
	h.rmu.Lock()
	h.startRetriesLocked()
	for _, kg := range inv {
		h.pending[kg] = true
	}
	h.rmu.Unlock()
	h.kickRetries()
}

// startRetriesLocked starts the retry goroutine unless it runs. rmu is
// held.
func (h *HotStore) startRetriesLocked() {
	if h.pending == nil {
		h.pending = map[[2]string]bool{}
		h.kick = make(chan struct{}, 1)
		h.retries.Go(h.retryLoop)
	}
}

// kickRetries wakes the retry goroutine, which has started.
func (h *HotStore) kickRetries() {
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
			h.invalidate(context.Background())
			return
		case <-h.kick:
		case <-time.After(pause):
		}
		done := h.invalidate(context.Background())
		if h.replayOwed() {
			done = false
		}
		if done {
			pause = 100 * time.Millisecond
		} else {
			pause = min(2*pause, 5*time.Second)
		}
	}
}

// invalidate runs the pending invalidations, in one round trip bounded
// by HotConfig.Timeout within base; true when none is left pending.
func (h *HotStore) invalidate(base context.Context) bool {
	h.rmu.Lock()
	batch := make([][2]string, 0, len(h.pending))
	for kg := range h.pending {
		batch = append(batch, kg)
	}
	h.rmu.Unlock()
	if len(batch) == 0 {
		return true
	}
	ctx, cancel := context.WithTimeout(base, h.cfg.Timeout)
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

// Close closes the inner store, then stops the applier after it has
// written what is queued, the retry of invalidations after one last
// attempt, and the revocation listener.
func (h *HotStore) Close() error {
	err := h.Store.Close() // no Apply after this
	h.stopOnce.Do(func() { close(h.stop) })
	<-h.applied
	h.retries.Wait()
	h.stopRevocations()
	if h.hl != nil {
		h.hl.Close() // the hook stays: calls fail at once if Redis was down
	}
	return err
}
