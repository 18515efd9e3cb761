package parley

import (
	"slices"
	"strings"
	"time"
)

// Server API keys and bots (design §3b "Identity"): an API key belongs to
// a bot account, a user that has no password and signs in only with its
// keys; a key carries scopes that say which routes and frames it may use.

// API key scopes.
const (
	ScopePost     = "post"     // send, edit and delete its own messages
	ScopeRooms    = "rooms"    // create rooms, join, leave, change a room, roles; list rooms and members
	ScopeHistory  = "history"  // read messages (REST pages, STOMP subscriptions), search, read positions
	ScopeModerate = "moderate" // remove and ban members, lift bans
	ScopeWebhooks = "webhooks" // add, list, resume and remove outgoing webhooks (the server's admin)
)

// Scopes are the API key scopes, in the order they are listed.
var Scopes = []string{ScopePost, ScopeRooms, ScopeHistory, ScopeModerate, ScopeWebhooks}

// APIKey is a stored server API key: only the SHA-256 of its secret is
// kept. A key's token is "pk_" + ID + "_" + secret.
type APIKey struct {
	ID        string
	Name      string // unique; the audit log names the key by it
	UserID    string // the bot account the key acts as
	Hash      []byte
	Scopes    []string
	RoomID    string // "": every room; else the one room the key may act in (an incoming webhook)
	CreatedAt time.Time
	RevokedAt *time.Time // nil: in use
}

// Allows reports whether the key holds scope.
func (k *APIKey) Allows(scope string) bool { return slices.Contains(k.Scopes, scope) }

// APIKeyPrefix starts every API key's token.
const APIKeyPrefix = "pk_"

// IsAPIKey reports whether token is shaped as an API key's.
func IsAPIKey(token string) bool { return strings.HasPrefix(token, APIKeyPrefix) }

// botPrefix starts a bot account's id: "b" and 26 characters, 27 in all,
// where NewID makes 26, so that a bot's id is never a person's. The kind
// of an account is in its id, as Slack's B… and U… ids.
const botPrefix = "b"

// NewBotID returns a fresh id for a bot account.
func NewBotID() string { return botPrefix + NewID() }

// IsBotID reports whether id is a bot account's (NewBotID).
func IsBotID(id string) bool { return len(id) == 27 && strings.HasPrefix(id, botPrefix) }
