package parley

import (
	"slices"
	"time"
)

// Outgoing webhooks (design §3b "Webhooks"): an admin registers a URL for
// event kinds, server-wide or for one room; each event of those kinds is
// POSTed to it, signed, at least once, in room order (package webhook,
// docs/webhooks.md). The events are read from the store's own record of
// the room (messages by seq, changes by change number, member and room
// events by event number), so a webhook's position in a room is three
// numbers.

// Webhook event kinds.
const (
	HookMessageSent    = "message.sent"
	HookMessageEdited  = "message.edited"
	HookMessageDeleted = "message.deleted"
	HookReaction       = "message.reaction" // a reaction added or taken back (the message's counts now)
	HookThread         = "message.thread"   // a root's thread summary moved (a reply)
	HookPin            = "message.pin"      // a message was pinned (its last change is its pin)
	HookMemberJoined   = "member.joined"
	HookMemberLeft     = "member.left"
	HookMemberRemoved  = "member.removed"
	HookMemberBanned   = "member.banned"
	HookMemberRole     = "member.role"
	HookRoomCreated    = "room.created"
	HookRoomUpdated    = "room.updated"
)

// HookKinds are the webhook event kinds, in the order they are listed.
var HookKinds = []string{HookMessageSent, HookMessageEdited, HookMessageDeleted, HookReaction, HookThread, HookPin,
	HookMemberJoined, HookMemberLeft, HookMemberRemoved, HookMemberBanned, HookMemberRole,
	HookRoomCreated, HookRoomUpdated}

// RoomEvent is a stored member or room event (the room_events table):
// one for each join, leave, removal, ban, role change, room creation and
// room update, written in the transaction of the change and numbered N
// from the room's event counter (1, 2, 3, … with no holes, in commit
// order), so that the webhooks replay them in order.
type RoomEvent struct {
	RoomID string
	N      int64
	Kind   string // a HookKinds member.* or room.* kind
	// Member is the member concerned, as it was after the change (for a
	// leave, removal or ban: as it was before it went); zero for a room
	// event. Its Name is read with the event (the user's name now).
	Member  RoomMember
	ActorID string // who did it: "" for a member's own join or leave, an owner passed on by a leave
	Room    Room   // the room after the change
	At      time.Time
}

// HookEventKind is the webhook kind of a committed member or room event
// (the stores record it as a RoomEvent), "" for the other kinds.
func HookEventKind(e *Event) string {
	switch e.Kind {
	case EventRoom:
		return HookRoomCreated
	case EventRoomInfo:
		return HookRoomUpdated
	case EventJoin:
		return HookMemberJoined
	case EventRole:
		return HookMemberRole
	case EventLeave:
		switch e.Reason {
		case LeaveRemoved:
			return HookMemberRemoved
		case LeaveBanned:
			return HookMemberBanned
		}
		return HookMemberLeft
	}
	return ""
}

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
// message with seq <= Seq has been sent, every change numbered <=
// Change, and every member or room event numbered <= Event. LastSeq,
// LastChange and LastEvent are the room's counters when it was read.
type HookPosition struct {
	RoomID     string
	Seq        int64
	Change     int64
	Event      int64
	LastSeq    int64
	LastChange int64
	LastEvent  int64
}

// Behind reports whether the room has events past the position.
func (p HookPosition) Behind() bool {
	return p.LastSeq > p.Seq || p.LastChange > p.Change || p.LastEvent > p.Event
}

// HookLease is a node's hold on a webhook's deliveries: only the holder
// of the current Token moves the webhook's positions (a fencing token: a
// node whose lease was taken over fails its next move).
type HookLease struct {
	WebhookID string
	Owner     string // the node id
	Token     int64
}
