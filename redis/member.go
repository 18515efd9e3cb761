package redis

import (
	"context"
	"strconv"
	"strings"
	"time"

	"parley"
)

// joinedField is the field of a user's memberships hash ("u:{user}") that
// holds when they joined room: the room's own field holds the read
// position. Room ids never contain ':', so no room's field starts so.
func joinedField(roomID string) string { return "j:" + roomID }

// roleField is the field of a user's memberships hash that holds their
// role in room.
func roleField(roomID string) string { return "o:" + roomID }

// isMetaField reports whether a field of the memberships hash is not a
// room: "_" (present even when there are no rooms), a joined time or a
// role.
func isMetaField(f string) bool {
	return f == "_" || strings.HasPrefix(f, "j:") || strings.HasPrefix(f, "o:")
}

// Member implements parley.Store from the user's memberships in Redis (one
// round trip when warm), loading them from the inner store when they are
// missing. Every request on a room checks it, so in steady state it keeps
// those requests off PostgreSQL. A "not a member" from Redis is confirmed
// by the inner store (it is rare: a refused request), so a join whose
// invalidation was lost never locks its member out; and when Redis fails
// the inner store answers. Fails with CodeNotFound for a non-member.
func (h *HotStore) Member(ctx context.Context, roomID, userID string) (parley.Member, error) {
	if isMetaField(roomID) { // "_" or "j:…" name no room: never a member
		return parley.Member{}, notMember(roomID, userID)
	}
	h.caughtUp(ctx)
	pipe := h.rdb.Pipeline()
	vals := pipe.HMGet(ctx, h.userKey(userID), "_", roomID, joinedField(roomID), roleField(roomID))
	genCmd := pipe.Get(ctx, h.userGen(userID))
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		h.warn("read member", err)
		h.m.miss(kindMember)
		return h.Store.Member(ctx, roomID, userID)
	}
	if v := vals.Val(); vals.Err() == nil && len(v) == 4 && v[0] != nil {
		if v[1] == nil {
			h.m.miss(kindMember)
			return h.Store.Member(ctx, roomID, userID)
		}
		if m, ok := decodeMember(roomID, userID, v[1], v[2], v[3]); ok {
			h.m.hit(kindMember)
			return m, nil
		}
		// Unreadable, or written before joined times or roles were kept:
		// load the hash again.
		h.forget(ctx, userID)
		genCmd = nil
	}
	h.m.miss(kindMember)
	ms, err := h.reload(ctx, userID, genCmd)
	if err != nil {
		return parley.Member{}, err
	}
	for _, m := range ms {
		if m.RoomID == roomID {
			return m, nil
		}
	}
	return parley.Member{}, notMember(roomID, userID)
}

// decodeMember builds a membership from its hash fields: the read position,
// the joined time in Unix microseconds and the role.
func decodeMember(roomID, userID string, read, joined, role any) (parley.Member, bool) {
	rs, _ := read.(string)
	js, _ := joined.(string)
	ro, _ := role.(string)
	seq, err1 := strconv.ParseInt(rs, 10, 64)
	us, err2 := strconv.ParseInt(js, 10, 64)
	if err1 != nil || err2 != nil || ro == "" {
		return parley.Member{}, false
	}
	return parley.Member{RoomID: roomID, UserID: userID, Role: ro, ReadSeq: seq, JoinedAt: time.UnixMicro(us).UTC()}, true
}

func notMember(roomID, userID string) error {
	return parley.Errorf(parley.CodeNotFound, "user %s is not a member of room %s", userID, roomID)
}
