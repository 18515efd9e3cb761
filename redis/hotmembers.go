package redis

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"parley"
)

// A room's member listing (RoomMembers) lives in the hash "m:{room}" under
// the hot prefix: the field "{user}" holds the member's read position and
// "i:{user}" the rest (memberInfo), plus "_" so that an empty room is a
// value; "g:m:{room}" is its generation. It follows the rules of the other
// hashes (see HotStore): a join, a leave (a removal too) and a role change
// delete it and move its generation, and a load installs what it read only
// if the generation has not moved; read positions only move forward, so
// reads and the sender's own messages raise them in place (scriptRaise).
// A role change also invalidates the member's memberships ("u:{user}",
// whose "o:{room}" fields hold roles), and a change of a room's title or
// capacity its info ("r:{room}").

func (h *HotStore) membersKey(id string) string { return h.cfg.Prefix + "hot:m:" + id }
func (h *HotStore) membersGen(id string) string { return h.cfg.Prefix + "hot:g:m:" + id }

// memberInfo is the stored form of a listed member but its read position.
type memberInfo struct {
	Role     string `json:"o"`
	JoinedAt int64  `json:"j"` // Unix µs
	Name     string `json:"n"`
}

// applyPeople adds to the pipeline what event ev changes of the member
// listings, memberships and room info, and returns inv with the
// invalidations it queued (retried if the pipeline fails).
func (h *HotStore) applyPeople(ctx context.Context, pipe goredis.Pipeliner, ev *parley.Event, ttl string, inv [][2]string) [][2]string {
	room := ev.Room.ID
	var now [][2]string
	switch ev.Kind {
	case parley.EventJoin, parley.EventLeave:
		now = append(now, [2]string{h.membersKey(room), h.membersGen(room)})
	case parley.EventRole:
		now = append(now, [2]string{h.membersKey(room), h.membersGen(room)}, [2]string{h.userKey(ev.UserID), h.userGen(ev.UserID)})
	case parley.EventRoomInfo:
		now = append(now, [2]string{h.roomKey(room), h.roomGen(room)})
	case parley.EventRead:
		scriptRaise.Eval(ctx, pipe, []string{h.membersKey(room), h.membersGen(room)}, ev.UserID, strconv.FormatInt(ev.ReadSeq, 10), ttl)
	case parley.EventMessage:
		scriptRaise.Eval(ctx, pipe, []string{h.membersKey(room), h.membersGen(room)}, ev.Message.SenderID, strconv.FormatInt(ev.Message.Seq, 10), ttl)
	}
	for _, kg := range now {
		scriptInvalidate.Eval(ctx, pipe, kg[:], ttl)
	}
	return append(inv, now...)
}

// RoomMembers implements parley.Store from Redis (one round trip when
// warm, after this node's queued commits are written), loading the listing from the inner store when it is missing or
// unreadable, or when Redis fails.
func (h *HotStore) RoomMembers(ctx context.Context, roomID string) ([]parley.RoomMember, error) {
	h.caughtUp(ctx)
	pipe := h.rdb.Pipeline()
	all := pipe.HGetAll(ctx, h.membersKey(roomID))
	genCmd := pipe.Get(ctx, h.membersGen(roomID))
	if _, err := pipe.Exec(ctx); err != nil && !isNil(err) {
		h.warn("read room members", err)
		h.m.miss(kindRoomMembers)
		return h.Store.RoomMembers(ctx, roomID)
	}
	if all.Err() == nil && len(all.Val()) > 0 {
		if ms, ok := parseRoomMembers(roomID, all.Val()); ok {
			h.m.hit(kindRoomMembers)
			return ms, nil
		}
		err := scriptInvalidate.Eval(ctx, h.rdb, []string{h.membersKey(roomID), h.membersGen(roomID)}, h.ttlArg()).Err()
		if err != nil && !isNil(err) {
			h.warn("forget room members", err)
		}
		genCmd = nil
	}
	h.m.miss(kindRoomMembers)
	ms, err := h.Store.RoomMembers(ctx, roomID)
	if err != nil {
		return nil, err
	}
	if genCmd != nil {
		if gen, ok := genOf(genCmd); ok {
			fv := make([]string, 0, 2+4*len(ms))
			fv = append(fv, "_", "")
			for _, m := range ms {
				info, _ := json.Marshal(memberInfo{Role: m.Role, JoinedAt: m.JoinedAt.UnixMicro(), Name: m.Name})
				fv = append(fv, m.UserID, strconv.FormatInt(m.ReadSeq, 10), "i:"+m.UserID, string(info))
			}
			h.populate(ctx, h.membersKey(roomID), h.membersGen(roomID), gen, fv...)
		}
	}
	return ms, nil
}

// UpdateRoom implements parley.Store; it returns once its commit is in
// Redis, as the writes of hotwrites.go do.
func (h *HotStore) UpdateRoom(ctx context.Context, roomID, actorID string, u parley.RoomUpdate) (parley.Room, error) {
	r, err := h.Store.UpdateRoom(ctx, roomID, actorID, u)
	if err == nil {
		h.caughtUp(ctx)
	}
	return r, err
}

// SetRole implements parley.Store, as UpdateRoom.
func (h *HotStore) SetRole(ctx context.Context, roomID, actorID, userID, role string) (parley.Member, error) {
	m, err := h.Store.SetRole(ctx, roomID, actorID, userID, role)
	if err == nil {
		h.caughtUp(ctx)
	}
	return m, err
}

// RemoveMember implements parley.Store, as UpdateRoom.
func (h *HotStore) RemoveMember(ctx context.Context, roomID, actorID, userID string, ban bool) (parley.Room, error) {
	r, err := h.Store.RemoveMember(ctx, roomID, actorID, userID, ban)
	if err == nil {
		h.caughtUp(ctx)
	}
	return r, err
}

// parseRoomMembers decodes a listing hash; ok is false when a field is
// unreadable or a member lacks half of its fields.
func parseRoomMembers(roomID string, fields map[string]string) ([]parley.RoomMember, bool) {
	ms := make([]parley.RoomMember, 0, len(fields)/2)
	for f, v := range fields {
		if f == "_" || strings.HasPrefix(f, "i:") {
			continue
		}
		seq, err := strconv.ParseInt(v, 10, 64)
		raw, ok := fields["i:"+f]
		var info memberInfo
		if err != nil || !ok || json.Unmarshal([]byte(raw), &info) != nil || info.Role == "" {
			return nil, false
		}
		ms = append(ms, parley.RoomMember{
			Member: parley.Member{RoomID: roomID, UserID: f, Role: info.Role, ReadSeq: seq, JoinedAt: time.UnixMicro(info.JoinedAt).UTC()},
			Name:   info.Name,
		})
	}
	if len(ms)*2+1 != len(fields) {
		return nil, false // an info without its read position
	}
	return ms, true
}
