package rest_test

import (
	"context"
	"slices"
	"strings"
	"unicode/utf8"

	"parley"
	"parley/chat"
)

// The fake's people operations follow chat's rules (chat/people.go): to a
// non-member the room is unknown; the owner and admins moderate, the owner
// alone sets roles, an admin removes plain members only; a direct room has
// no moderation. The listing is in join order (the fake knows no presence).

func (c *fakeChat) roleLocked(fr *fakeRoom, userID string) string {
	if r, ok := fr.roles[userID]; ok {
		return r
	}
	return parley.RoleMember
}

// peopleLocked returns a room u is a member of, or the unknown room's
// answer; with moderate it also refuses a direct room.
func (c *fakeChat) peopleLocked(u parley.User, roomID string, moderate bool) (*fakeRoom, error) {
	fr, ok := c.rooms[roomID]
	if !ok || !slices.Contains(fr.members, u.ID) {
		return nil, errNoRoom()
	}
	if moderate && fr.room.Kind == parley.KindDirect {
		return nil, parley.Errorf(parley.CodeForbidden, "a direct room has no moderation")
	}
	return fr, nil
}

func errNotModerator() error {
	return parley.Errorf(parley.CodeForbidden, "only the room's owner or an admin may do this")
}

func (c *fakeChat) entryLocked(fr *fakeRoom, id string) chat.MemberEntry {
	u, _ := c.userByIDLocked(id)
	return chat.MemberEntry{User: u, Role: c.roleLocked(fr, id), JoinedAt: fr.room.CreatedAt,
		ReadSeq: c.readSeqs[[2]string{fr.room.ID, id}]}
}

func (c *fakeChat) Members(ctx context.Context, u parley.User, roomID, cursor string, limit int) ([]chat.MemberEntry, string, error) {
	if err := checkLimit(limit); err != nil {
		return nil, "", err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.peopleLocked(u, roomID, false)
	if err != nil {
		return nil, "", err
	}
	// The cursor is the index of the next member, as text.
	start := 0
	if cursor != "" {
		start = strings.Count(cursor, ".")
		if cursor != strings.Repeat(".", start) || start > len(fr.members) {
			return nil, "", parley.Errorf(parley.CodeInvalid, "malformed cursor")
		}
	}
	end := min(start+limit, len(fr.members))
	var out []chat.MemberEntry
	for _, id := range fr.members[start:end] {
		out = append(out, c.entryLocked(fr, id))
	}
	next := ""
	if end < len(fr.members) {
		next = strings.Repeat(".", end)
	}
	return out, next, nil
}

func (c *fakeChat) UpdateRoom(ctx context.Context, u parley.User, roomID string, up chat.RoomUpdate) (parley.Room, error) {
	switch {
	case up.Title == nil && up.Capacity == nil && up.RetentionSeconds == nil:
		return parley.Room{}, parley.Errorf(parley.CodeInvalid, "nothing to change")
	case up.RetentionSeconds != nil && (*up.RetentionSeconds < 0 || *up.RetentionSeconds > parley.MaxRetentionSeconds):
		return parley.Room{}, parley.Errorf(parley.CodeInvalid, "bad retention")
	case up.Title != nil && (*up.Title == "" || utf8.RuneCountInString(*up.Title) > chat.MaxTitle):
		return parley.Room{}, parley.Errorf(parley.CodeInvalid, "bad title")
	case up.Capacity != nil && *up.Capacity < 0:
		return parley.Room{}, parley.Errorf(parley.CodeInvalid, "negative capacity")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.peopleLocked(u, roomID, true)
	if err != nil {
		return parley.Room{}, err
	}
	if !parley.MayModerate(c.roleLocked(fr, u.ID)) {
		return parley.Room{}, errNotModerator()
	}
	if up.Capacity != nil && *up.Capacity != 0 && *up.Capacity < fr.room.MemberCount {
		return parley.Room{}, parley.Errorf(parley.CodeConflict, "capacity below the members")
	}
	if up.Title != nil {
		fr.room.Title = *up.Title
	}
	if up.Capacity != nil {
		fr.room.Capacity = *up.Capacity
	}
	if up.RetentionSeconds != nil {
		fr.room.RetentionSeconds = *up.RetentionSeconds
	}
	return fr.room, nil
}

func (c *fakeChat) SetRole(ctx context.Context, u parley.User, roomID, userID, role string) (chat.MemberEntry, error) {
	if role != parley.RoleAdmin && role != parley.RoleMember {
		return chat.MemberEntry{}, parley.Errorf(parley.CodeInvalid, "bad role")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.peopleLocked(u, roomID, true)
	if err != nil {
		return chat.MemberEntry{}, err
	}
	switch {
	case c.roleLocked(fr, u.ID) != parley.RoleOwner:
		return chat.MemberEntry{}, parley.Errorf(parley.CodeForbidden, "only the owner sets roles")
	case !slices.Contains(fr.members, userID):
		return chat.MemberEntry{}, parley.Errorf(parley.CodeNotFound, "not a member")
	case c.roleLocked(fr, userID) == parley.RoleOwner:
		return chat.MemberEntry{}, parley.Errorf(parley.CodeForbidden, "the owner's role cannot change")
	}
	fr.roles[userID] = role
	return c.entryLocked(fr, userID), nil
}

func (c *fakeChat) AddMember(ctx context.Context, u parley.User, roomID, userID string) (chat.MemberEntry, bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.peopleLocked(u, roomID, true)
	if err != nil {
		return chat.MemberEntry{}, false, err
	}
	if _, ok := c.userByIDLocked(userID); !ok {
		return chat.MemberEntry{}, false, parley.Errorf(parley.CodeNotFound, "no such user")
	}
	switch {
	case !parley.MayModerate(c.roleLocked(fr, u.ID)):
		return chat.MemberEntry{}, false, errNotModerator()
	case slices.Contains(fr.members, userID):
		return c.entryLocked(fr, userID), false, nil
	}
	if _, banned := fr.bans[userID]; banned {
		return chat.MemberEntry{}, false, parley.Errorf(parley.CodeConflict, "banned: lift the ban first")
	}
	fr.members = append(fr.members, userID)
	return c.entryLocked(fr, userID), true, nil
}

func (c *fakeChat) Remove(ctx context.Context, u parley.User, roomID, userID string, ban bool) error {
	if userID == u.ID {
		return parley.Errorf(parley.CodeInvalid, "leave instead")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.peopleLocked(u, roomID, true)
	if err != nil {
		return err
	}
	actor := c.roleLocked(fr, u.ID)
	i := slices.Index(fr.members, userID)
	target, exists := c.userByIDLocked(userID)
	switch {
	case !parley.MayModerate(actor):
		return errNotModerator()
	case i >= 0 && !parley.MayRemove(actor, c.roleLocked(fr, userID)):
		return parley.Errorf(parley.CodeForbidden, "an admin may remove plain members only")
	case i < 0 && (!ban || !exists):
		return parley.Errorf(parley.CodeNotFound, "not a member")
	}
	if ban {
		if fr.bans == nil {
			fr.bans = map[string]parley.Ban{}
		}
		fr.bans[userID] = parley.Ban{RoomID: roomID, UserID: userID, Name: target.Name, ActorID: u.ID, BannedAt: parley.Now()}
	}
	if i >= 0 {
		fr.members = slices.Delete(fr.members, i, i+1)
		fr.room.MemberCount--
		delete(fr.roles, userID)
	}
	return nil
}

func (c *fakeChat) Unban(ctx context.Context, u parley.User, roomID, userID string) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.peopleLocked(u, roomID, true)
	if err != nil {
		return err
	}
	if !parley.MayModerate(c.roleLocked(fr, u.ID)) {
		return errNotModerator()
	}
	delete(fr.bans, userID)
	return nil
}

func (c *fakeChat) Bans(ctx context.Context, u parley.User, roomID string) ([]parley.Ban, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fr, err := c.peopleLocked(u, roomID, true)
	if err != nil {
		return nil, err
	}
	if !parley.MayModerate(c.roleLocked(fr, u.ID)) {
		return nil, errNotModerator()
	}
	out := []parley.Ban{}
	for _, b := range fr.bans {
		out = append(out, b)
	}
	slices.SortFunc(out, func(a, b parley.Ban) int { return b.BannedAt.Compare(a.BannedAt) })
	return out, nil
}
