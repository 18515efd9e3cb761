package parley

// EventKind says what changed.
type EventKind uint8

// Event kinds.
const (
	EventRoom     EventKind = iota + 1 // a room was created (members join with EventJoin)
	EventJoin                          // UserID joined Room
	EventLeave                         // UserID left Room
	EventRead                          // UserID's read position in Room moved to ReadSeq
	EventMessage                       // Message was stored; Room is the room after it
	EventRoomInfo                      // Room's title or capacity changed; ActorID changed it
	EventRole                          // UserID's role in Room changed to Role; ActorID changed it
	EventEdited                        // Message (its new version) was edited by UserID; Room is the room after it
	EventDeleted                       // Message (now a tombstone) was deleted by UserID; Room is the room after it
	EventUnban                         // UserID's ban from Room was lifted by ActorID (UserID is not a member)
	EventReaction                      // UserID added or removed (Reason) Emoji on Message (its new version); Room is the room after it
	EventThread                        // Message (a root, its new version) got a reply from UserID; Room is the room after it
	EventPin                           // UserID pinned or unpinned (Reason) Message (its new version); Room is the room after it
)

// Why a member left a room (Event.Reason of an EventLeave).
const (
	LeaveLeft    = ""        // the member left
	LeaveRemoved = "removed" // an owner or admin (ActorID) removed them
	LeaveBanned  = "banned"  // an owner or admin (ActorID) removed and banned them
)

// Event is one committed change of a Store. A store that accepts an event
// sink (the OnCommit field of its config) calls it with the changes of each
// transaction, in commit order, after the commit and before any of the
// writes in it returns to its caller. Caches and the fan-out hub are kept
// current by it. Room is always the room as it stands after the change.
type Event struct {
	Kind    EventKind
	Room    Room
	UserID  string  // EventJoin, EventLeave, EventRead; the sender for EventMessage; who edited or deleted
	ReadSeq int64   // EventRead, EventJoin: the member's read position
	Message Message // EventMessage; EventEdited and EventDeleted: the message's new version
	Role    string  // EventJoin, EventRole: the member's role
	Reason  string  // EventLeave: LeaveLeft, LeaveRemoved or LeaveBanned; EventReaction: ReactionAdded or ReactionRemoved; EventPin: PinAdded or PinRemoved
	Emoji   string  // EventReaction: the emoji
	ActorID string  // EventRoomInfo, EventRole, EventUnban, a removal: who did it
	Reads   []Read  // EventReads: the read positions that moved
	// Users are, for EventMention, the users to tell.
	Users []string
}

// Signals: room events that are never stored. They travel between the
// nodes of a cluster in a Batch, beside the committed events, to the
// nodes that hold the room's online members (design §4 "Room events").
// Their values stay clear of the committed kinds above, which may grow.
const (
	EventTyping  EventKind = 100 + iota // UserID is typing in Room (Room.ID only)
	EventReads                          // read positions of Room moved (Reads), coalesced by the node that committed them
	EventMention                        // Message (stored, or its new version after an edit) mentions Users, who are told (mentions.go)
)

// Read is one member's read position, as a read event lists it.
type Read struct {
	UserID string `json:"user"`
	Seq    int64  `json:"seq"`
}

// EventSink receives committed events in commit order. It runs on the
// store's writer: it must not block and must not call back into the store's
// write methods.
type EventSink func([]Event)
