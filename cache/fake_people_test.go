package cache_test

import (
	"context"

	"parley"
)

// The fake's people writes check no roles and keep no bans (the
// conformance suite pins those on the real stores): they change the
// members and rooms and emit the events the real stores emit, which is
// what the cache sees.

func (f *fakeStore) RoomMembers(ctx context.Context, roomID string) ([]parley.RoomMember, error) {
	f.mu.RLock()
	_, ok := f.rooms[roomID]
	var out []parley.RoomMember
	for _, m := range f.members[roomID] {
		out = append(out, parley.RoomMember{Member: m, Name: f.users[m.UserID].Name})
	}
	f.mu.RUnlock()
	f.read("RoomMembers")
	if !ok {
		return nil, notFound("room", roomID)
	}
	return out, nil
}

func (f *fakeStore) UpdateRoom(ctx context.Context, roomID, actorID string, u parley.RoomUpdate) (parley.Room, error) {
	var r parley.Room
	err := f.write(func(emit func(parley.Event)) error {
		var ok bool
		if r, ok = f.rooms[roomID]; !ok {
			return notFound("room", roomID)
		}
		if u.Title != nil {
			r.Title = *u.Title
		}
		if u.Capacity != nil {
			r.Capacity = *u.Capacity
		}
		f.rooms[roomID] = r
		emit(parley.Event{Kind: parley.EventRoomInfo, Room: r, ActorID: actorID})
		return nil
	})
	return r, err
}

func (f *fakeStore) SetRole(ctx context.Context, roomID, actorID, userID, role string) (parley.Member, error) {
	var m parley.Member
	err := f.write(func(emit func(parley.Event)) error {
		var ok bool
		if m, ok = f.members[roomID][userID]; !ok {
			return notFound("member", userID)
		}
		m.Role = role
		f.members[roomID][userID] = m
		emit(parley.Event{Kind: parley.EventRole, Room: f.rooms[roomID], UserID: userID, Role: role, ActorID: actorID})
		return nil
	})
	return m, err
}

func (f *fakeStore) RemoveMember(ctx context.Context, roomID, actorID, userID string, ban bool) (parley.Room, error) {
	var r parley.Room
	err := f.write(func(emit func(parley.Event)) error {
		var ok bool
		if r, ok = f.rooms[roomID]; !ok {
			return notFound("room", roomID)
		}
		if _, ok := f.members[roomID][userID]; !ok {
			return notFound("member", userID)
		}
		delete(f.members[roomID], userID)
		r.MemberCount--
		f.rooms[roomID] = r
		reason := parley.LeaveRemoved
		if ban {
			reason = parley.LeaveBanned
		}
		emit(parley.Event{Kind: parley.EventLeave, Room: r, UserID: userID, Reason: reason, ActorID: actorID})
		return nil
	})
	return r, err
}

func (f *fakeStore) Unban(ctx context.Context, roomID, actorID, userID string) error { return nil }

func (f *fakeStore) Bans(ctx context.Context, roomID string) ([]parley.Ban, error) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	if _, ok := f.rooms[roomID]; !ok {
		return nil, notFound("room", roomID)
	}
	return nil, nil
}
