package chat

import (
	"cmp"
	"context"
	"encoding/base64"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"parley"
)

// People in a room (design §3a): the member listing, the room's info,
// roles, removals and bans. Every operation here is for members of the
// room only: to anyone else the room reads as unknown (CodeNotFound, the
// one text of errRoomNotFound), group room or not. A member without the
// role an operation needs, and any moderation of a direct room, get
// CodeForbidden. The store checks the actor's role again inside the
// write's transaction (parley.PeopleStore), so a demotion that commits
// between this service's check and the write wins.

// Seen tells the member listing who is online. Seen returns what is known
// of each user of userIDs; a user it leaves out is offline and never seen.
type Seen interface {
	Seen(ctx context.Context, userIDs []string) (map[string]parley.Seen, error)
}

// MemberEntry is one line of a room's member listing as a member sees it.
type MemberEntry struct {
	User     parley.User
	Role     string
	JoinedAt time.Time
	ReadSeq  int64
	Online   bool
	// LastSeenAt is when the user's last session closed; zero when not
	// known (never seen, or online).
	LastSeenAt time.Time
}

// member checks that u is a member of the room, or answers
// errRoomNotFound, and returns the membership.
func (s *Service) member(ctx context.Context, u parley.User, roomID string) (parley.Member, error) {
	m, err := s.store.Member(ctx, roomID, u.ID)
	if parley.ErrorCode(err) == parley.CodeNotFound {
		return m, errRoomNotFound()
	}
	return m, err
}

// Members returns a page of the room's members, online ones first, then by
// name (then id), after cursor ("" for the first page), and the cursor of
// the next page ("" at the end). A member whose presence changes while
// someone pages moves between the two halves: like the room list, a pass
// never shows one member twice at one position, but may show them twice
// or miss them across that change; clients refresh on online and offline
// events. Fails with CodeInvalid for a bad limit or cursor.
func (s *Service) Members(ctx context.Context, u parley.User, roomID, cursor string, limit int) ([]MemberEntry, string, error) {
	if err := checkLimit(limit); err != nil {
		return nil, "", err
	}
	after, hasAfter, err := parseMemberCursor(cursor)
	if err != nil {
		return nil, "", err
	}
	if _, err := s.member(ctx, u, roomID); err != nil {
		return nil, "", err
	}
	list, err := s.store.RoomMembers(ctx, roomID)
	if err != nil {
		return nil, "", hideRoom(err)
	}
	entries := s.entries(ctx, list)
	slices.SortFunc(entries, func(a, b MemberEntry) int { return compareKeys(keyOf(a), keyOf(b)) })
	i := 0
	if hasAfter {
		i, _ = slices.BinarySearchFunc(entries, after, func(e MemberEntry, k memberKey) int {
			if compareKeys(keyOf(e), k) <= 0 {
				return -1
			}
			return 1
		})
	}
	page := entries[i:]
	next := ""
	if len(page) > limit {
		page = page[:limit]
		next = keyOf(page[limit-1]).String()
	}
	return page, next, nil
}

// entries turns listed members into entries with their presence.
func (s *Service) entries(ctx context.Context, list []parley.RoomMember) []MemberEntry {
	var seen map[string]parley.Seen
	if s.seen != nil && len(list) > 0 {
		ids := make([]string, len(list))
		for i, m := range list {
			ids[i] = m.UserID
		}
		// Presence is an extra: a listing without it (everyone offline)
		// beats no listing while the presence store is down.
		seen, _ = s.seen.Seen(ctx, ids)
	}
	out := make([]MemberEntry, len(list))
	for i, m := range list {
		p := seen[m.UserID]
		out[i] = MemberEntry{User: parley.User{ID: m.UserID, Name: m.Name}, Role: m.Role, JoinedAt: m.JoinedAt,
			ReadSeq: m.ReadSeq, Online: p.Online, LastSeenAt: p.LastSeenAt}
		if p.Online {
			out[i].LastSeenAt = time.Time{}
		}
	}
	return out
}

// memberKey is a position in the member listing's order.
type memberKey struct {
	online   bool
	name, id string
}

func keyOf(e MemberEntry) memberKey { return memberKey{e.Online, e.User.Name, e.User.ID} }

// compareKeys orders online first, then by name, then by id.
func compareKeys(a, b memberKey) int {
	if a.online != b.online {
		if a.online {
			return -1
		}
		return 1
	}
	return cmp.Or(strings.Compare(a.name, b.name), strings.Compare(a.id, b.id))
}

// String encodes the key as an opaque cursor.
func (k memberKey) String() string {
	o := "0"
	if k.online {
		o = "1"
	}
	return base64.RawURLEncoding.EncodeToString([]byte(o + ":" + k.id + ":" + k.name))
}

// parseMemberCursor decodes a cursor made by memberKey.String; "" is the
// start.
func parseMemberCursor(s string) (memberKey, bool, error) {
	if s == "" {
		return memberKey{}, false, nil
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	parts := strings.SplitN(string(b), ":", 3)
	if err != nil || len(parts) != 3 || (parts[0] != "0" && parts[0] != "1") || parts[1] == "" {
		return memberKey{}, false, parley.Errorf(parley.CodeInvalid, "malformed cursor")
	}
	return memberKey{online: parts[0] == "1", id: parts[1], name: parts[2]}, true, nil
}

// RoomUpdate is a change of a room's title, capacity and/or retention; a
// nil field stays as it is.
type RoomUpdate = parley.RoomUpdate

// UpdateRoom changes a group room's title, capacity and/or retention
// (RetentionSeconds: 0, the server's default, to
// parley.MaxRetentionSeconds), as its owner or an admin, and returns the
// room after it. Fails with CodeInvalid for an empty change, a bad title,
// a negative capacity or a retention out of bounds, and CodeConflict for
// a capacity (but 0, unlimited) below member_count.
func (s *Service) UpdateRoom(ctx context.Context, u parley.User, roomID string, up RoomUpdate) (parley.Room, error) {
	switch {
	case up.Title == nil && up.Capacity == nil && up.RetentionSeconds == nil:
		return parley.Room{}, parley.Errorf(parley.CodeInvalid, "give a title, a capacity or a retention to change")
	case up.Title != nil && !validTitle(*up.Title):
		return parley.Room{}, parley.Errorf(parley.CodeInvalid, "title must be 1 to %d characters of valid UTF-8", MaxTitle)
	case up.Capacity != nil && *up.Capacity < 0:
		return parley.Room{}, parley.Errorf(parley.CodeInvalid, "capacity must be 0 (unlimited) or more")
	}
	if err := parley.CheckRoomUpdate(up); err != nil { // the stores' rule: the retention's bounds
		return parley.Room{}, err
	}
	if _, err := s.member(ctx, u, roomID); err != nil {
		return parley.Room{}, err
	}
	return s.store.UpdateRoom(ctx, roomID, u.ID, up)
}

func validTitle(t string) bool {
	return t != "" && utf8.ValidString(t) && utf8.RuneCountInString(t) <= MaxTitle
}

// AddMember makes userID a member of a group room, as its owner or an
// admin (Slack's "add people to a channel"; how a bot that created a room
// fills it), and returns their entry; added is false when they were one
// already. The join is the user's own, as the store makes it: same seat
// check, same member event. Fails with CodeForbidden for a plain member,
// CodeInvalid in a direct room, CodeNotFound for an unknown or deleted user,
// CodeConflict for a user banned from the room (lift the ban first) and
// CodeRoomFull when no seat is left.
//
// The caller's role is read before the join, not in its transaction: an
// admin demoted at that very moment may still add one member, as any
// moderation call in flight when the role changes completes.
func (s *Service) AddMember(ctx context.Context, u parley.User, roomID, userID string) (MemberEntry, bool, error) {
	me, err := s.member(ctx, u, roomID)
	if err != nil {
		return MemberEntry{}, false, err
	}
	r, err := s.store.Room(ctx, roomID)
	if err != nil {
		return MemberEntry{}, false, hideRoom(err)
	}
	switch {
	case r.Kind != parley.KindGroup:
		return MemberEntry{}, false, parley.Errorf(parley.CodeInvalid, "a direct room has its two members only")
	case !parley.MayModerate(me.Role):
		return MemberEntry{}, false, parley.Errorf(parley.CodeForbidden, "only the room's owner and admins add members")
	}
	who, err := s.store.User(ctx, userID)
	if parley.ErrorCode(err) == parley.CodeNotFound || err == nil && deletedAccount(who) {
		return MemberEntry{}, false, parley.Errorf(parley.CodeNotFound, "no such user")
	}
	if err != nil {
		return MemberEntry{}, false, err
	}
	_, added, err := s.store.Join(ctx, roomID, userID)
	switch parley.ErrorCode(err) {
	case "":
	case parley.CodeForbidden:
		return MemberEntry{}, false, parley.Errorf(parley.CodeConflict, "%s is banned from this room: lift the ban first", who.Name)
	default:
		return MemberEntry{}, false, hideRoom(err)
	}
	m, err := s.store.Member(ctx, roomID, userID)
	if err != nil {
		return MemberEntry{}, false, err
	}
	return s.entries(ctx, []parley.RoomMember{{Member: m, Name: who.Name}})[0], added, nil
}

// SetRole makes member userID an admin or a plain member, as the room's
// owner, and returns their entry. Fails with CodeInvalid for another role,
// CodeNotFound when userID is not a member, and CodeForbidden for the
// owner's own role.
func (s *Service) SetRole(ctx context.Context, u parley.User, roomID, userID, role string) (MemberEntry, error) {
	if role != parley.RoleAdmin && role != parley.RoleMember {
		return MemberEntry{}, parley.Errorf(parley.CodeInvalid, "role must be %q or %q", parley.RoleAdmin, parley.RoleMember)
	}
	if _, err := s.member(ctx, u, roomID); err != nil {
		return MemberEntry{}, err
	}
	m, err := s.store.SetRole(ctx, roomID, u.ID, userID, role)
	if err != nil {
		return MemberEntry{}, err
	}
	who, err := s.store.User(ctx, userID)
	if err != nil {
		return MemberEntry{}, err
	}
	return s.entries(ctx, []parley.RoomMember{{Member: m, Name: who.Name}})[0], nil
}

// Remove removes member userID from the room, banning them with ban, as
// the owner or an admin (an admin removes plain members only). With ban a
// user who is not a member is banned all the same. Fails with CodeInvalid
// for oneself (that is Leave) and CodeNotFound for a user who is not a
// member (without ban) or does not exist.
func (s *Service) Remove(ctx context.Context, u parley.User, roomID, userID string, ban bool) error {
	if userID == u.ID {
		return parley.Errorf(parley.CodeInvalid, "to leave a room, leave it (DELETE .../members/me)")
	}
	if _, err := s.member(ctx, u, roomID); err != nil {
		return err
	}
	_, err := s.store.RemoveMember(ctx, roomID, u.ID, userID, ban)
	return err
}

// Unban lifts userID's ban from the room, as its owner or an admin; a user
// who is not banned changes nothing.
func (s *Service) Unban(ctx context.Context, u parley.User, roomID, userID string) error {
	if _, err := s.member(ctx, u, roomID); err != nil {
		return err
	}
	return s.store.Unban(ctx, roomID, u.ID, userID)
}

// Bans returns the room's bans, newest first, to its owner and admins.
func (s *Service) Bans(ctx context.Context, u parley.User, roomID string) ([]parley.Ban, error) {
	m, err := s.member(ctx, u, roomID)
	if err != nil {
		return nil, err
	}
	r, err := s.store.Room(ctx, roomID)
	if err != nil {
		return nil, hideRoom(err)
	}
	switch {
	case r.Kind == parley.KindDirect:
		return nil, parley.Errorf(parley.CodeForbidden, "a direct room has no moderation")
	case !parley.MayModerate(m.Role):
		return nil, parley.Errorf(parley.CodeForbidden, "only the room's owner or an admin may see its bans")
	}
	bans, err := s.store.Bans(ctx, roomID)
	return bans, hideRoom(err)
}
