package parley

import (
	"context"
	"time"
	"unicode"
	"unicode/utf8"
)

// Store is the durable state of Parley: accounts, rooms, members and
// messages. Implementations (sqlite, postgres) keep it on disk; cache wraps
// any of them with an in-memory view of the hot reads. The conformance suite
// in parleytest runs against every implementation.
//
// Results may be shared between callers (the cache hands out the same
// slices and messages to every reader): treat them as read-only. A store
// never changes a result once returned either, so a caller may keep one
// and, handed the same slice again, know it holds the same (the rest
// package's memo relies on it).
//
// All methods are safe for concurrent use. Writes that return without error
// are committed and durable per the implementation's sync setting. Errors a
// user may see are *Error with the codes named below; anything else is
// internal.
type Store interface {
	// CreateUser stores a new account. Fails with CodeNameTaken when the
	// name is registered already. With u.ID set (an id derived from an
	// outside identity: JWT sign-in), the account takes that id, and
	// every refusal is CodeConflict: the id exists, or the name is taken
	// or held; of several creates of one id at once, on any node, one
	// succeeds (the caller reads User(u.ID) to tell which it met).
	CreateUser(ctx context.Context, u NewUser) (User, error)
	// UserByName returns the account with that name and its password hash.
	// Fails with CodeNotFound.
	UserByName(ctx context.Context, name string) (User, []byte, error)
	// User returns the account with that id. Fails with CodeNotFound.
	User(ctx context.Context, id string) (User, error)
	// CreateToken stores an access token by the hash of its secret.
	CreateToken(ctx context.Context, t Token) error
	// TokenUser returns the owner of the unexpired token with that hash at
	// time now. Fails with CodeUnauthorized for an unknown or expired token.
	TokenUser(ctx context.Context, hash []byte, now time.Time) (User, Token, error)
	// RevokeToken deletes the token with that hash, so that TokenUser
	// fails with CodeUnauthorized from the moment it returns; an unknown
	// hash changes nothing. A store that caches tokens forgets it.
	RevokeToken(ctx context.Context, hash []byte) error
	// RevokeUserTokens deletes every token of the user (log out
	// everywhere), as RevokeToken does each; other users' tokens keep
	// working.
	RevokeUserTokens(ctx context.Context, userID string) error

	// CreateRoom stores a new room with its creator as the first member
	// (and, for a direct room, the peer as the second). A direct room is
	// unique per pair: asking again returns the existing room and created
	// false. Fails with CodeNotFound when the peer does not exist.
	CreateRoom(ctx context.Context, r NewRoom) (room Room, created bool, err error)
	// Room returns a room. Fails with CodeNotFound.
	Room(ctx context.Context, id string) (Room, error)
	// Join makes userID a member of the room and returns the room after the
	// change. joined is false when the user was a member already (nothing
	// changes). A new member's role is RoleMember. Fails with CodeNotFound
	// for an unknown room, CodeForbidden for a direct room or a user banned
	// from the room (see PeopleStore), and CodeRoomFull when member_count has reached a
	// non-zero capacity; member_count never exceeds capacity, under any
	// concurrency.
	Join(ctx context.Context, roomID, userID string) (room Room, joined bool, err error)
	// Leave removes userID from the room and returns the room after the
	// change (an owner's leave passes the ownership on, see PeopleStore).
	// Leaving a room one is not a member of changes nothing. Fails
	// with CodeNotFound for an unknown room.
	Leave(ctx context.Context, roomID, userID string) (Room, error)
	// Member returns a membership. Fails with CodeNotFound when the user is
	// not a member (or the room does not exist).
	Member(ctx context.Context, roomID, userID string) (Member, error)
	// Members returns the user ids of every member of the room, in no
	// particular order. Fails with CodeNotFound for an unknown room.
	Members(ctx context.Context, roomID string) ([]string, error)
	// Memberships returns every membership of the user, in no particular
	// order.
	Memberships(ctx context.Context, userID string) ([]Member, error)

	// Send stores a message with the next seq of its room, assigned in the
	// same transaction, and moves the sender's read position to it. A
	// repeat of (room, sender, client_id) with a non-empty client_id
	// returns the original message with created false and stores nothing.
	// The store itself refuses a sender who is not a member with
	// CodeForbidden, checked inside the send's transaction (a leave may
	// commit after the caller's own check).
	Send(ctx context.Context, m NewMessage) (msg Message, created bool, err error)
	// Messages returns a page of a room's history (see Page). Fails with
	// CodeNotFound for an unknown room.
	Messages(ctx context.Context, roomID string, p Page) ([]Message, error)
	// Rooms returns the user's room list, newest activity first, one page
	// after cursor (see RoomCursor), and the cursor of the next page ("" at
	// the end). Fails with CodeInvalid for a malformed cursor.
	Rooms(ctx context.Context, userID string, cursor string, limit int) ([]RoomEntry, string, error)
	// MarkRead moves the user's read position in the room forward to seq
	// (clamped to the room's last seq) and returns the membership after the
	// change; a seq at or behind the position changes nothing. Fails with
	// CodeNotFound when the user is not a member.
	MarkRead(ctx context.Context, roomID, userID string, seq int64) (Member, error)

	// Message edits and deletions (edits.go).
	MessageChanges
	// Message search (search.go).
	MessageSearch
	// Reactions on messages (reactions.go).
	ReactionStore
	// Threads of replies (replies.go).
	ThreadStore
	// Pinned messages (pins.go).
	PinStore
	// Notification levels and mention counts (mentions.go).
	MentionStore
	// PeopleStore: the member listing, roles, room info, removals and
	// bans (people.go).
	PeopleStore

	// Ping checks that the store is reachable.
	Ping(ctx context.Context) error
	// Close waits for pending writes and releases the store.
	Close() error
}

// NewUser is a registration: the name and the password's KDF hash.
type NewUser struct {
	Name         string
	PasswordHash []byte
	// ID, when set, is the account's id (see CreateUser); empty: the
	// store makes one.
	ID string
}

// Token is a stored access token: only the hash of its secret is kept.
type Token struct {
	Hash      []byte
	UserID    string
	CreatedAt time.Time
	ExpiresAt time.Time
	// Key is the API key this credential is (apikeys.go); nil for a
	// user's token. Never stored with the token.
	Key *APIKey
}

// NewRoom asks for a room. Kind is KindGroup or KindDirect; PeerID names the
// other user of a direct room.
type NewRoom struct {
	Kind      string
	Title     string
	Capacity  int
	CreatorID string
	PeerID    string
}

// NewMessage asks to store a message. ClientID, when not empty, is the
// sender's idempotency key.
type NewMessage struct {
	RoomID     string
	SenderID   string
	SenderName string
	Body       string
	ClientID   string
	// ReplyTo, when above 0, is the seq of the message of the same room
	// this one replies to (replies.go): it must exist (CodeInvalid
	// otherwise) and not be deleted (CodeConflict); a reply to a reply
	// replies to its root.
	ReplyTo int64
	// Files are the files the message carries, claimed by the caller
	// (files.go); stores that keep no files refuse a message with files.
	Files FileList
	// Mentions are the resolved mentions of Body (mentions.go), stored
	// with the message.
	Mentions MentionList
}

// MaxClientID is the longest idempotency key (client_id), in bytes.
const MaxClientID = 64

// CheckClientID refuses, with CodeInvalid, an idempotency key that is longer
// than MaxClientID or is not text: invalid UTF-8 or a control character. The
// key goes back out in the client-id header of every MESSAGE of its message,
// to every member, so every transport refuses the same keys.
//
// It runs once per request, in package chat (Send, EditMessage,
// DeleteMessage): the one place the STOMP gateway and the REST handlers
// both pass a received client-id through, so neither edge checks it again.
func CheckClientID(id string) error {
	ok := len(id) <= MaxClientID && utf8.ValidString(id)
	for _, r := range id {
		if !ok {
			break
		}
		ok = !unicode.IsControl(r)
	}
	if !ok {
		return Errorf(CodeInvalid, "client-id must be at most %d bytes of text: valid UTF-8, no control characters", MaxClientID)
	}
	return nil
}

// Page selects a page of a room's history. With After >= 0 it is the
// messages with seq > After, oldest first (catching up); otherwise it is the
// messages with seq < Before (the newest when Before is 0), newest first.
// Limit is the page size, 1 to MaxPageLimit.
type Page struct {
	Before int64
	After  int64
	Limit  int
}

// Newest returns the page of the newest limit messages.
func Newest(limit int) Page { return Page{After: -1, Limit: limit} }

// Forward reports whether the page is read oldest first.
func (p Page) Forward() bool { return p.After >= 0 }

// Page size bounds.
const (
	DefaultPageLimit = 50
	MaxPageLimit     = 100
)

// ClampPageLimit is the page size the stores use for a requested limit n:
// DefaultPageLimit for 0 or less, MaxPageLimit for more than it.
func ClampPageLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultPageLimit
	case n > MaxPageLimit:
		return MaxPageLimit
	}
	return n
}
