package parley

import (
	"crypto/rand"
	"encoding/base32"
	"time"
)

// User is a registered account.
type User struct {
	ID        string    `json:"id"`
	Name      string    `json:"name"`
	CreatedAt time.Time `json:"-"`
	// Bot is what the API says of a bot account (IsBotID): the transports
	// set it on the users they show; the stores leave it false.
	Bot bool `json:"bot,omitempty"`
}

// Room kinds.
const (
	KindGroup  = "group"
	KindDirect = "direct"
)

// Room is a conversation. Every message of a room has a sequence number,
// 1, 2, 3, ... with no holes; LastSeq is the newest. LastChange is the
// room's second counter, moved by every edit and deletion of its messages
// (1, 2, 3, ... with no holes; see Message.Change).
type Room struct {
	ID             string    `json:"id"`
	Kind           string    `json:"kind"`
	Title          string    `json:"title"`
	Capacity       int       `json:"capacity"` // 0 = unlimited
	MemberCount    int       `json:"member_count"`
	LastSeq        int64     `json:"last_seq"`
	LastChange     int64     `json:"last_change"`
	LastActivityAt time.Time `json:"last_activity_at"`
	// RetentionSeconds is how long the room keeps its messages, in
	// seconds (retention.go); 0: the server's default retention.
	RetentionSeconds int64     `json:"retention_seconds"`
	CreatedAt        time.Time `json:"-"`
	// DirectKey identifies the pair of a direct room (see DirectKey); empty
	// for group rooms.
	DirectKey string `json:"-"`
}

// Full reports whether no one else can join the room.
func (r Room) Full() bool { return r.Capacity > 0 && r.MemberCount >= r.Capacity }

// Member roles (design §3a). The creator of a group room is its owner;
// admins moderate beside the owner. Both members of a direct room are plain
// members: a direct room has no moderation.
const (
	RoleOwner  = "owner"
	RoleAdmin  = "admin"
	RoleMember = "member"
)

// Member is a user's membership of a room. ReadSeq is the user's read
// position: messages with a seq above it are unread. It only moves forward.
// Role is one of RoleOwner, RoleAdmin and RoleMember.
type Member struct {
	RoomID   string    `json:"room_id"`
	UserID   string    `json:"user_id"`
	Role     string    `json:"role"`
	ReadSeq  int64     `json:"read_seq"`
	JoinedAt time.Time `json:"joined_at"`
}

// Seen is what the cluster knows of a user's presence: Online while the
// user holds at least one live STOMP session on any node, and LastSeenAt the
// moment the user's last session closed (zero when never seen).
type Seen struct {
	Online     bool
	LastSeenAt time.Time
}

// Message is one stored message of a room. EditedAt and DeletedAt are nil
// until it is first edited or deleted; Change is the room's change number
// (Room.LastChange) of the last edit or deletion that touched it, 0 until
// then. A deleted message stays as a tombstone: same seq, empty body,
// DeletedAt set.
type Message struct {
	ID         string     `json:"id"`
	RoomID     string     `json:"room_id"`
	Seq        int64      `json:"seq"`
	SenderID   string     `json:"sender_id"`
	SenderName string     `json:"sender_name"`
	Body       string     `json:"body"`
	ClientID   string     `json:"client_id"`
	SentAt     time.Time  `json:"sent_at"`
	EditedAt   *time.Time `json:"edited_at"`
	DeletedAt  *time.Time `json:"deleted_at"`
	Change     int64      `json:"change"`
	// Reactions are the message's emoji counts (reactions.go), in the
	// order each emoji first appeared; empty for none.
	Reactions []Reaction `json:"reactions,omitempty"`
	// ReplyTo is the root this message replies to (replies.go); nil for
	// a message that is no reply.
	ReplyTo *ReplyRef `json:"reply_to,omitempty"`
	// Thread is a root's summary of its replies; nil until the first.
	Thread *Thread `json:"thread,omitempty"`
	// Files are the files the message carries (files.go); nil for most
	// messages and for a tombstone.
	Files FileList `json:"files,omitempty"`
	// Mentions are the members the text mentions (mentions.go): their
	// user ids, and MentionRoom for "@room"; empty for none.
	Mentions MentionList `json:"mentions,omitempty"`
	// Pinned is the message's pin (pins.go); nil when it is not pinned.
	Pinned *Pin `json:"pinned,omitempty"`
	// ChangeSeq is where the last change fell among the room's messages:
	// the room's LastSeq when it committed, so the change comes after
	// that message and before the next in the room's order (the
	// webhooks'). Only MessageChanges.Changed sets it; it is 0 elsewhere,
	// and for a change stored before the stores kept it or imported.
	ChangeSeq int64 `json:"-"`
}

// Deleted reports whether the message is a tombstone.
func (m *Message) Deleted() bool { return m.DeletedAt != nil }

// RoomEntry is one line of a member's room list.
type RoomEntry struct {
	Room        Room     `json:"room"`
	LastMessage *Message `json:"last_message"`
	Unread      int64    `json:"unread"`
	// Mentions is how many unread messages mention the member (or the
	// room), none at level NotifyNone, and Notifications the member's
	// level (mentions.go: NotifyAll, NotifyMentions or NotifyNone; ""
	// stands for NotifyAll in an entry built by hand). Every Store's Rooms
	// fills both: the durable stores count them with the list, the caches
	// keep them with the membership.
	Mentions      int64  `json:"mentions"`
	Notifications string `json:"notifications"`
}

// Unread is the number of messages of room r after read position readSeq.
func Unread(r Room, readSeq int64) int64 {
	if n := r.LastSeq - readSeq; n > 0 {
		return n
	}
	return 0
}

// NewID returns a fresh random identifier: 26 lowercase base32 characters
// (128 random bits), opaque to clients.
func NewID() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand panics on a broken source)
	return idEncoding.EncodeToString(b[:])
}

var idEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// Now returns the current time in UTC truncated to microseconds, the
// precision every store keeps, so that a value read back equals the value
// written.
func Now() time.Time { return time.Now().UTC().Truncate(time.Microsecond) }

// DirectKey is the key that makes a direct room unique per pair of users,
// whichever of the two asks.
func DirectKey(a, b string) string {
	if a > b {
		a, b = b, a
	}
	return a + ":" + b
}
