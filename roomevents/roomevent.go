package roomevents

import "sync/atomic"

// NumShapes is how many encodings of one event a transport may cache (as
// many as of a message: hub.NumShapes).
const NumShapes = 16

// Event kinds, the value of the event header.
const (
	KindMember   = "member"
	KindTyping   = "typing"
	KindRead     = "read"
	KindOnline   = "online"
	KindOffline  = "offline"
	KindEdited   = "edited"   // a message's new version (replay.go)
	KindDeleted  = "deleted"  // a message's tombstone (replay.go)
	KindReaction = "reaction" // a message's reactions changed (replay.go)
	KindThread   = "thread"   // a root got a reply: its thread summary (replay.go)
	KindPin      = "pin"      // a message was pinned or unpinned (replay.go)
)

// Actions of a member event, the value of the action header.
const (
	ActionJoined  = "joined"
	ActionLeft    = "left"
	ActionRemoved = "removed"
	ActionBanned  = "banned"
	ActionUnban   = "unbanned" // a ban was lifted (the user is not a member): the moderators' ban lists
	ActionRole    = "role"
	ActionRoom    = "room" // the room's title or capacity changed
)

// RoomEvent is one event on its way to local subscribers, shared by all of
// them and encoded once per frame shape (Encoded), like a Message.
type RoomEvent struct {
	ID      string      // message-id of its frames
	Kind    string      // the event header
	RoomID  string      // the room; "" for an event of the personal queue only
	Headers [][2]string // further headers, in order
	Body    []byte      // JSON

	from   string // typing: its user, who does not get it
	change int64  // edited, deleted: the room's change number
	enc    [NumShapes]atomic.Value
}

// Header returns the value of header name, "" when absent.
func (e *RoomEvent) Header(name string) string {
	for _, h := range e.Headers {
		if h[0] == name {
			return h[1]
		}
	}
	return ""
}

// Encoded returns the transport's encoding of e for shape, computed once
// (see Message.Encoded).
func (e *RoomEvent) Encoded(shape int, encode func(*RoomEvent) any) any {
	if v := e.enc[shape].Load(); v != nil {
		return v
	}
	v := encode(e)
	if e.enc[shape].CompareAndSwap(nil, v) {
		return v
	}
	return e.enc[shape].Load()
}
