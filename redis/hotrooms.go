package redis

import (
	"context"
	"slices"
	"strconv"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// memberships returns the user's rooms and read positions, from Redis or
// loaded from the inner store, and the generations that key the memo of
// their notification states (hotnotify.go), read in the same round trip.
func (h *HotStore) memberships(ctx context.Context, userID string) (map[string]int64, notifyGens, error) {
	pipe := h.rdb.Pipeline()
	all := pipe.HGetAll(ctx, h.userKey(userID))
	genCmd := pipe.Get(ctx, h.userGen(userID))
	ngCmd := pipe.Get(ctx, h.notifyGen(userID))
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		h.warn("read memberships", err)
	}
	var g notifyGens
	var ok1, ok2 bool
	g.user, ok1 = genOf(genCmd)
	g.notify, ok2 = genOf(ngCmd)
	g.ok = ok1 && ok2
	if all.Err() == nil && len(all.Val()) > 0 {
		if reads, ok := parseReads(all.Val()); ok {
			h.m.hit(kindMemberships)
			return reads, g, nil
		}
		h.forget(ctx, userID) // unreadable: load it again
		genCmd, g = nil, notifyGens{}
	}
	h.m.miss(kindMemberships)
	ms, err := h.reload(ctx, userID, genCmd)
	if err != nil {
		return nil, g, err
	}
	reads := make(map[string]int64, len(ms))
	for _, m := range ms {
		reads[m.RoomID] = m.ReadSeq
	}
	return reads, g, nil
}

// parseReads returns the read position of each room of a memberships hash;
// ok is false when one is unreadable.
func parseReads(fields map[string]string) (map[string]int64, bool) {
	reads := make(map[string]int64, len(fields)/2)
	for room, v := range fields {
		if isMetaField(room) {
			continue
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return nil, false
		}
		reads[room] = n
	}
	return reads, true
}

// forget deletes a user's memberships hash and moves its generation, so
// that the next read loads it again.
func (h *HotStore) forget(ctx context.Context, userID string) {
	err := scriptInvalidate.Eval(ctx, h.rdb, []string{h.userKey(userID), h.userGen(userID)}, h.ttlArg()).Err()
	if err != nil && !isNil(err) {
		h.warn("forget memberships", err)
	}
}

// reload loads the user's memberships after a miss: installed in Redis if
// the generation genCmd read with the miss still holds (nil: the hash was
// just forgotten, install nothing).
func (h *HotStore) reload(ctx context.Context, userID string, genCmd *goredis.StringCmd) ([]parley.Member, error) {
	gen, ok := "", false
	if genCmd != nil {
		gen, ok = genOf(genCmd)
	}
	return h.loadMemberships(ctx, userID, gen, ok)
}

// loadMemberships reads the user's memberships from the inner store and,
// when store is set, installs them in Redis if the generation is still
// gen: each room's read position and joined time (member.go), and "_".
func (h *HotStore) loadMemberships(ctx context.Context, userID, gen string, store bool) ([]parley.Member, error) {
	ms, err := h.Store.Memberships(ctx, userID)
	if err != nil {
		return nil, err
	}
	if store {
		fv := make([]string, 0, 2+6*len(ms))
		fv = append(fv, "_", "")
		for _, m := range ms {
			fv = append(fv, m.RoomID, strconv.FormatInt(m.ReadSeq, 10),
				joinedField(m.RoomID), strconv.FormatInt(m.JoinedAt.UnixMicro(), 10), roleField(m.RoomID), m.Role)
		}
		h.populate(ctx, h.userKey(userID), h.userGen(userID), gen, fv...)
	}
	return ms, nil
}

// Rooms implements parley.Store: the memberships, the rooms' info and their
// last messages come from Redis (two round trips when warm), loaded from
// the inner store where missing. The mention counts and levels come from
// the inner store (NotifyStates, one statement), which has every node's
// levels and reads at once; this node keeps each user's answer, so that a
// warm list asks it again only once the entries' rooms, last seqs, last
// changes or unread counts have moved, or the user's level was set or
// their rooms joined or left, on any node (hotnotify.go).
func (h *HotStore) Rooms(ctx context.Context, userID, cursor string, limit int) ([]parley.RoomEntry, string, error) {
	c, after, err := parley.ParseRoomCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	limit = parley.ClampPageLimit(limit)
	h.caughtUp(ctx)
	readAt := time.Now() // before the generations are read
	reads, gens, err := h.memberships(ctx, userID)
	if err != nil {
		return nil, "", err
	}
	ids := make([]string, 0, len(reads))
	for id := range reads {
		ids = append(ids, id)
	}
	es, err := h.getRooms(ctx, ids)
	if err != nil {
		return nil, "", err
	}
	for _, e := range es {
		if e != nil {
			e.Unread = parley.Unread(e.Room, reads[e.Room.ID])
		}
	}
	var notify map[string]parley.RoomNotify
	if len(es) > 0 {
		if notify, err = h.notifyStates(ctx, userID, es, gens, readAt); err != nil {
			return nil, "", err
		}
	}
	entries := make([]parley.RoomEntry, 0, len(es))
	for _, e := range es {
		if e == nil || (after && c.Before(e.Room)) {
			continue
		}
		e.Mentions, e.Notifications = 0, parley.NotifyAll // rooms at the default are not in notify
		if n, ok := notify[e.Room.ID]; ok {
			e.Mentions, e.Notifications = n.Mentions, n.Level
		}
		entries = append(entries, *e)
	}
	slices.SortFunc(entries, func(a, b parley.RoomEntry) int {
		switch {
		case parley.RoomNewer(a.Room, b.Room):
			return -1
		case parley.RoomNewer(b.Room, a.Room):
			return 1
		}
		return 0
	})
	next := ""
	if len(entries) > limit {
		entries = entries[:limit]
		next = parley.CursorOf(entries[limit-1].Room).String()
	}
	return entries, next, nil
}
