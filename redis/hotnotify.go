package redis

import (
	"context"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// Mention counts and notification levels in the room list. Redis does not
// keep them: the shared store has every node's levels and reads at once,
// and its NotifyStates is one statement. Rooms keeps each user's last
// answer on this node (notifyMemo), so that a warm room list asks the
// store nothing while nothing changed, and knows exactly when something
// did, on any node. The answer is kept under:
//
//   - a fingerprint of the room list's entries it was read for
//     (fingerprint): each room's id, last seq and last change and the
//     member's unread count. Every message, edit, deletion and read moves
//     one of them, and they come from Redis, where every node's commits
//     move them, so a mention sent or read on any node is a miss on the
//     next list here;
//   - the user's notify generation "g:n:{user}" (notifyGen), which
//     SetNotifyLevel sets to a fresh value after the inner store has
//     committed the level, and which a join or leave of the user (the
//     applier) and ForgetHot (an import's levels) set too: a rejoined
//     room is back at level all with a fingerprint that may not have
//     moved;
//   - the user's memberships generation "g:u:{user}", which the same
//     joins and leaves move, and which SetNotifyLevel moves (with the
//     invalidation retries) when it could not set the notify generation.
//
// Both generations are read in the memberships' round trip, so a warm
// room list costs no round trip more. Ordering: each of them moves
// after the change it reports is committed in PostgreSQL, and the
// fingerprint's inputs are in Redis only after their commit. A list reads
// them first and NotifyStates after, so an answer is never older than the
// key it is kept under: a list that saw the new generation reads the new
// level; one that read the old generation keeps its answer under it, and
// the next list, which sees the new one, misses. The notify generation
// takes a fresh random value rather than counting, so an expired key
// that is set again never repeats an old value; its TTL
// (notifyGenTTL) is longer than an answer's (notifyMemoTTL, counted from
// the read of the generations), so an answer kept while the key was
// absent cannot outlive a value set after it. While Redis fails the
// generations cannot be read and every list asks the store.
const (
	notifyGenTTL  = time.Hour
	notifyMemoTTL = 10 * time.Minute
	notifyMemoMax = 100_000 // users whose answers are kept; past it the memo starts again empty
)

func (h *HotStore) notifyGen(id string) string { return h.cfg.Prefix + "hot:g:n:" + id }

// moveNotifyGen queues on pipe the move of userID's notify generation to
// a fresh value.
func (h *HotStore) moveNotifyGen(ctx context.Context, pipe goredis.Cmdable, userID string) *goredis.StatusCmd {
	return pipe.Set(ctx, h.notifyGen(userID), parley.NewID(), notifyGenTTL)
}

// notifyGens are the generations a room list read with the memberships,
// which key the memo of its NotifyStates answer; ok when both were read.
type notifyGens struct {
	notify, user string
	ok           bool
}

// SetNotifyLevel implements parley.Store: the level is set in the inner
// store, then the user's notify generation moves, so that every node's
// next room list reads it. When Redis fails that, the user's memberships
// are invalidated instead, with the invalidations that are retried until
// Redis takes them (the memberships generation keys the memo too).
func (h *HotStore) SetNotifyLevel(ctx context.Context, roomID, userID, level string) error {
	if err := h.Store.SetNotifyLevel(ctx, roomID, userID, level); err != nil {
		return err
	}
	h.notify.drop(userID)
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), h.cfg.Timeout)
	defer cancel()
	if err := h.moveNotifyGen(wctx, h.rdb, userID).Err(); err != nil {
		h.warn("move notify generation", err)
		h.retryLater([][2]string{{h.userKey(userID), h.userGen(userID)}})
	}
	return nil
}

// notifyStates returns the inner store's NotifyStates for userID's room
// list es (each entry's Unread filled), from this node's memo when
// neither the entries' fingerprint nor the generations g, read at
// readAt, have moved since it was read.
func (h *HotStore) notifyStates(ctx context.Context, userID string, es []*parley.RoomEntry, g notifyGens, readAt time.Time) (map[string]parley.RoomNotify, error) {
	if !g.ok {
		h.m.miss(kindNotify)
		return h.Store.NotifyStates(ctx, userID)
	}
	fp := fingerprint(es)
	if st, ok := h.notify.get(userID, fp, g, time.Now()); ok {
		h.m.hit(kindNotify)
		return st, nil
	}
	h.m.miss(kindNotify)
	st, err := h.Store.NotifyStates(ctx, userID)
	if err != nil {
		return nil, err
	}
	h.notify.put(userID, notifyEntry{fp: fp, gens: g, at: readAt, st: st})
	return st, nil
}

// notifyMemo keeps each user's last NotifyStates answer on this node
// (notifyStates).
type notifyMemo struct {
	mu    sync.Mutex // guards the following field
	users map[string]notifyEntry
}

type notifyEntry struct {
	fp   uint64
	gens notifyGens
	at   time.Time                    // when the generations were read
	st   map[string]parley.RoomNotify // shared, read-only
}

func (m *notifyMemo) get(userID string, fp uint64, g notifyGens, now time.Time) (map[string]parley.RoomNotify, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	e, ok := m.users[userID]
	if !ok || e.fp != fp || e.gens != g || now.Sub(e.at) >= notifyMemoTTL || now.Before(e.at) {
		return nil, false
	}
	return e.st, true
}

func (m *notifyMemo) put(userID string, e notifyEntry) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.users == nil || len(m.users) >= notifyMemoMax {
		m.users = map[string]notifyEntry{}
	}
	m.users[userID] = e
}

func (m *notifyMemo) drop(userID string) {
	m.mu.Lock()
	delete(m.users, userID)
	m.mu.Unlock()
}

// fingerprint hashes what moves a member's mention counts: each entry's
// room (the first 8 bytes of its id: 40 random bits), last seq, last
// change and unread count, a word at a time. The entries' hashes are
// added, so their order (a map's, in Rooms) does not matter; nil entries
// (rooms not found) are left out.
func fingerprint(es []*parley.RoomEntry) uint64 {
	var sum uint64
	for _, e := range es {
		if e == nil {
			continue
		}
		h := uint64(14695981039346656037)
		mix := func(v uint64) {
			h = (h ^ v) * 1099511628211
			h ^= h >> 29
		}
		mix(idWord(e.Room.ID))
		mix(uint64(e.Room.LastSeq))
		mix(uint64(e.Room.LastChange))
		mix(uint64(e.Unread))
		h ^= h >> 33 // spread the last word's bits before the sum
		h *= 0xff51afd7ed558ccd
		h ^= h >> 33
		sum += h
	}
	return sum
}

// idWord is the first 8 bytes of id as a word (fewer: those there are).
func idWord(id string) uint64 {
	var w uint64
	for i := 0; i < 8 && i < len(id); i++ {
		w |= uint64(id[i]) << (8 * i)
	}
	return w
}
