package parley

import (
	"slices"
	"time"
)

// Outgoing webhooks (design §3b "Webhooks"): an admin registers a URL for
// event kinds, server-wide or for one room; each event of those kinds is
// POSTed to it, signed, at least once, in room order (package webhook,
// docs/webhooks.md). The events are read from the store's own record of
// the room (messages by seq, changes by change number), so a webhook's
// position in a room is two numbers.

// Webhook event kinds.
const (
	HookMessageSent    = "message.sent"
	HookMessageEdited  = "message.edited"
	HookMessageDeleted = "message.deleted"
)

// HookKinds are the webhook event kinds, in the order they are listed.
var HookKinds = []string{HookMessageSent, HookMessageEdited, HookMessageDeleted}

// Webhook is a registered outgoing webhook.
type Webhook struct {
	ID        string
	Name      string // unique; the admin commands and the log name it
	URL       string
	Secret    string   // the HMAC key of its signatures, kept as given (it signs every delivery)
	Kinds     []string // HookKinds it receives; the others move its position without a delivery
	RoomID    string   // "": every room; else that room only
	CreatedAt time.Time
	// PausedAt is when deliveries stopped after too many failures (nil:
	// delivering); PausedReason says why.
	PausedAt     *time.Time
	PausedReason string
}

// Wants reports whether the webhook receives events of kind.
func (h *Webhook) Wants(kind string) bool { return slices.Contains(h.Kinds, kind) }

// HookPosition is how far a webhook has delivered a room's events: every
// message with seq <= Seq has been sent, and every change numbered <=
// Change. LastSeq and LastChange are the room's counters when it was read.
type HookPosition struct {
	RoomID     string
	Seq        int64
	Change     int64
	LastSeq    int64
	LastChange int64
}

// Behind reports whether the room has events past the position.
func (p HookPosition) Behind() bool { return p.LastSeq > p.Seq || p.LastChange > p.Change }

// HookLease is a node's hold on a webhook's deliveries: only the holder
// of the current Token moves the webhook's positions (a fencing token: a
// node whose lease was taken over fails its next move).
type HookLease struct {
	WebhookID string
	Owner     string // the node id
	Token     int64
}
