package parley

import (
	"context"
	"time"
)

// PeopleStore is the part of Store that keeps who is in a room and what
// they may do there (design §3a): the member listing, roles, a room's info,
// removals and bans. Every write checks the actor's role inside its own
// transaction, so an owner's change committed just before it (a demotion,
// a removal) is what it sees, and refuses with CodeForbidden:
//
//   - UpdateRoom: the owner or an admin;
//   - SetRole: the owner only; the owner's own role never changes;
//   - RemoveMember: the owner, or an admin removing a plain member; nobody
//     removes themselves (that is Leave);
//   - Unban: the owner or an admin.
//
// A direct room has no moderation: each of these writes refuses it with
// CodeForbidden. An actor who is not a member is refused with CodeForbidden
// too (callers hide the room from outsiders before they ask). Every write
// fails with CodeNotFound for an unknown room.
//
// Roles: the creator of a group room is its owner, joiners are members, and
// both members of a direct room are members. When the owner leaves, the
// longest-standing admin becomes the owner, or the longest-standing member
// when there is no admin (an EventRole with an empty ActorID says so); a
// room nobody is left in has no owner.
type PeopleStore interface {
	// RoomMembers returns every member of the room with role, read
	// position, joined time and name, in no particular order. Fails with
	// CodeNotFound for an unknown room.
	RoomMembers(ctx context.Context, roomID string) ([]RoomMember, error)
	// UpdateRoom changes the room's title, capacity and/or retention and
	// returns the room after it, with one EventRoomInfo (none when nothing
	// changes). Fails with CodeInvalid for an empty change, a negative
	// capacity or a retention out of bounds (CheckRoomUpdate)
	// and with CodeConflict for a capacity (other than 0, unlimited) below
	// member_count; a concurrent join never takes the room past it.
	UpdateRoom(ctx context.Context, roomID, actorID string, u RoomUpdate) (Room, error)
	// SetRole makes member userID a RoleAdmin or a RoleMember and returns
	// the membership after it, with one EventRole (none when the role is
	// already that). Fails with CodeInvalid for another role and
	// CodeNotFound when userID is not a member.
	SetRole(ctx context.Context, roomID, actorID, userID, role string) (Member, error)
	// RemoveMember removes userID from the room and returns the room after
	// it, with one EventLeave whose Reason is LeaveRemoved, or LeaveBanned
	// with ban, and ActorID the actor. With ban the user's later joins fail
	// with CodeForbidden until Unban; a user who is not a member is banned
	// all the same (no event). Fails with CodeNotFound when userID is not a
	// member (without ban) or does not exist, and CodeInvalid when actorID
	// is userID.
	RemoveMember(ctx context.Context, roomID, actorID, userID string, ban bool) (Room, error)
	// Unban lifts userID's ban; a user who is not banned changes nothing.
	Unban(ctx context.Context, roomID, actorID, userID string) error
	// Bans returns the room's bans, newest first. Fails with CodeNotFound
	// for an unknown room. It checks no actor: callers do.
	Bans(ctx context.Context, roomID string) ([]Ban, error)
}

// RoomMember is one line of a room's member listing: the membership and
// the member's name.
type RoomMember struct {
	Member
	Name string `json:"name"`
}

// RoomUpdate is a change of a room's info; a nil field stays as it is.
type RoomUpdate struct {
	Title    *string
	Capacity *int
	// RetentionSeconds sets Room.RetentionSeconds: 0 (the server's
	// default) to MaxRetentionSeconds.
	RetentionSeconds *int64
}

// CheckRoomUpdate is the rule UpdateRoom applies before it reads the room,
// the one both stores call: CodeInvalid for an update that changes
// nothing, an empty title, a negative capacity or a retention outside 0 to
// MaxRetentionSeconds.
func CheckRoomUpdate(u RoomUpdate) error {
	switch {
	case u.Title == nil && u.Capacity == nil && u.RetentionSeconds == nil:
		return Errorf(CodeInvalid, "nothing to change")
	case u.Title != nil && *u.Title == "":
		return Errorf(CodeInvalid, "empty title")
	case u.Capacity != nil && *u.Capacity < 0:
		return Errorf(CodeInvalid, "negative capacity")
	case u.RetentionSeconds != nil && (*u.RetentionSeconds < 0 || *u.RetentionSeconds > MaxRetentionSeconds):
		return Errorf(CodeInvalid, "retention_seconds must be 0 (the server's default) to %d", MaxRetentionSeconds)
	}
	return nil
}

// Applied returns r after u: u's fields where it sets them, r's where it
// does not.
func (u RoomUpdate) Applied(r Room) Room {
	if u.Title != nil {
		r.Title = *u.Title
	}
	if u.Capacity != nil {
		r.Capacity = *u.Capacity
	}
	if u.RetentionSeconds != nil {
		r.RetentionSeconds = *u.RetentionSeconds
	}
	return r
}

// Ban keeps a user out of a room: their joins fail with CodeForbidden.
// ActorID banned them at BannedAt; Name is the banned user's.
type Ban struct {
	RoomID   string    `json:"room_id"`
	UserID   string    `json:"user_id"`
	Name     string    `json:"name"`
	ActorID  string    `json:"actor_id"`
	BannedAt time.Time `json:"banned_at"`
}

// MayModerate reports whether a member with role may change the room's info,
// remove plain members and lift bans.
func MayModerate(role string) bool { return role == RoleOwner || role == RoleAdmin }

// MayRemove reports whether a member with role actor may remove a member
// with role target: the owner anyone, an admin plain members only.
func MayRemove(actor, target string) bool {
	return actor == RoleOwner && target != RoleOwner || actor == RoleAdmin && target == RoleMember
}
