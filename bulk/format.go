package bulk

import (
	"time"

	"parley"
)

// Format is the header's "format": what makes a file a Parley export.
const Format = "parley-export"

// Version is the newest format version this program writes and reads.
// Version 2 added the file records; a version 1 file reads as before.
// The messages' mentions and the members' notifications came later in
// version 2: a reader that does not know them ignores them (it imports the
// messages mentioning nobody and the members at all), and misreads
// nothing, so they made no new version.
const Version = 2

// Header is the first line of a file.
type Header struct {
	Format     string    `json:"format"`
	Version    int       `json:"version"`
	Type       string    `json:"type"` // "header"
	ExportedAt time.Time `json:"exported_at"`
	// Source is the store exported: "sqlite" or "postgres".
	Source string `json:"source"`
	// Room is the one room exported; empty for a whole server.
	Room string `json:"room,omitempty"`
	// WithSecrets: the users carry their password hashes, and tokens
	// and API keys are in the file.
	WithSecrets bool `json:"with_secrets"`
}

// User is an account: parley.User with its creation time, and its
// password hash in an export with secrets.
type User struct {
	parley.User
	CreatedAt    time.Time `json:"created_at"`
	PasswordHash []byte    `json:"password_hash,omitempty"`
}

// Token is a stored access token (only in an export with secrets): the
// hash of its secret, never the secret.
type Token struct {
	Hash      []byte    `json:"hash"`
	UserID    string    `json:"user_id"`
	CreatedAt time.Time `json:"created_at"`
	ExpiresAt time.Time `json:"expires_at"`
}

// APIKey is a server API key of a bot account (only in an export with
// secrets): the hash of its secret, never the secret. RoomID, when set,
// makes it that room's incoming webhook.
type APIKey struct {
	ID        string     `json:"id"`
	Name      string     `json:"name"`
	UserID    string     `json:"user_id"`
	Hash      []byte     `json:"hash"`
	Scopes    []string   `json:"scopes"`
	RoomID    string     `json:"room_id,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	RevokedAt *time.Time `json:"revoked_at"`
}

// NameHold is a deleted account's name held back from registration until
// Until.
type NameHold struct {
	Name  string    `json:"name"`
	Until time.Time `json:"until"`
}

// Room is parley.Room with what a copy needs beside the REST shape: its
// creation time and, for a direct room, the key of its pair.
type Room struct {
	parley.Room
	CreatedAt time.Time `json:"created_at"`
	DirectKey string    `json:"direct_key,omitempty"`
}

// ChangeKey is the idempotency key of an applied edit or deletion
// (parley.ChangeKey) with the room, user and client_id it belongs to, so
// that a client's retry after the move still applies nothing.
type ChangeKey struct {
	RoomID   string `json:"room_id"`
	UserID   string `json:"user_id"`
	ClientID string `json:"client_id"`
	Seq      int64  `json:"seq"`
	Deleted  bool   `json:"deleted"`
	Change   int64  `json:"change"`
}

// Reaction is one user's emoji on a message (parley.ReactionStore): the
// message's counts travel with it (parley.Message.Reactions), who reacted
// in these records.
type Reaction struct {
	RoomID    string    `json:"room_id"`
	Seq       int64     `json:"seq"`
	Emoji     string    `json:"emoji"`
	UserID    string    `json:"user_id"`
	CreatedAt time.Time `json:"created_at"`
}

// MaxFileSize is the largest file record an import takes, in bytes:
// 1 TiB, far above any upload a server takes (--files-max-size; an
// export from a server with a larger limit than this one's still
// imports), and low enough that no user's files can total more than an
// int64 holds.
const MaxFileSize int64 = 1 << 40

// File is an uploaded file's row (docs/files.md): its metadata, the
// SHA-256 of its bytes, and the seq of the message that carries it (0:
// none). The bytes are not in the file: parley export --files-dir writes
// them beside it, one file per blob named by the id (docs/export-format.md).
type File struct {
	ID        string    `json:"id"`
	RoomID    string    `json:"room_id"`
	Uploader  string    `json:"uploader"`
	Name      string    `json:"name"`
	Type      string    `json:"type"`
	Size      int64     `json:"size"`
	SHA256    []byte    `json:"sha256"`
	Preview   bool      `json:"preview"`
	CreatedAt time.Time `json:"created_at"`
	Seq       int64     `json:"seq"`
	Claim     string    `json:"claim,omitempty"`
}

// Member is a membership (parley.Member) with the member's notification
// level in the room (parley.NotifyAll and the others), empty for
// parley.NotifyAll, the default, so that the file names only the others.
type Member struct {
	parley.Member
	Notifications string `json:"notifications,omitempty"`
}

// Counts is how many records of each type a file holds (its end line) or
// an import wrote.
type Counts struct {
	Users      int64 `json:"users"`
	Tokens     int64 `json:"tokens"`
	APIKeys    int64 `json:"api_keys"`
	NameHolds  int64 `json:"name_holds"`
	Rooms      int64 `json:"rooms"`
	Members    int64 `json:"members"`
	Bans       int64 `json:"bans"`
	Messages   int64 `json:"messages"`
	ChangeKeys int64 `json:"change_keys"`
	Reactions  int64 `json:"reactions"`
	Files      int64 `json:"files"`
}

// Add adds o's counts to c.
func (c *Counts) Add(o Counts) {
	c.Users += o.Users
	c.Tokens += o.Tokens
	c.APIKeys += o.APIKeys
	c.NameHolds += o.NameHolds
	c.Rooms += o.Rooms
	c.Members += o.Members
	c.Bans += o.Bans
	c.Messages += o.Messages
	c.ChangeKeys += o.ChangeKeys
	c.Reactions += o.Reactions
	c.Files += o.Files
}

// Records is the number of records counted.
func (c Counts) Records() int64 {
	return c.Users + c.Tokens + c.APIKeys + c.NameHolds + c.Rooms + c.Members + c.Bans + c.Messages + c.ChangeKeys + c.Reactions + c.Files
}

// line is every line after the header: Type says which one other field
// it carries.
type line struct {
	Type      string          `json:"type"`
	User      *User           `json:"user,omitempty"`
	Token     *Token          `json:"token,omitempty"`
	APIKey    *APIKey         `json:"api_key,omitempty"`
	NameHold  *NameHold       `json:"name_hold,omitempty"`
	Room      *Room           `json:"room,omitempty"`
	Member    *Member         `json:"member,omitempty"`
	Ban       *parley.Ban     `json:"ban,omitempty"`
	Message   *parley.Message `json:"message,omitempty"`
	ChangeKey *ChangeKey      `json:"change_key,omitempty"`
	Reaction  *Reaction       `json:"reaction,omitempty"`
	File      *File           `json:"file,omitempty"`
	Counts    *Counts         `json:"counts,omitempty"` // the end line
}

// The record types, in the order a file holds them: the accounts first,
// then each room followed by its own records, then the end line.
const (
	typeUser      = "user"
	typeToken     = "token"
	typeAPIKey    = "api_key"
	typeNameHold  = "name_hold"
	typeRoom      = "room"
	typeMessage   = "message"
	typeChangeKey = "change_key"
	typeReaction  = "reaction"
	typeFile      = "file"
	typeBan       = "ban"
	typeMember    = "member"
	typeEnd       = "end"
)
