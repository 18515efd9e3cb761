package parley

import (
	"context"
	"time"
)

// Pinned messages (design §3b, issue 31 part 6): the room's owner and
// admins pin a message, or unpin it. Each effective pin or unpin takes the
// room's next change number, as an edit or a reaction does, and the
// message records it (Message.Change), so caches, changed_after and
// since-change carry pins the way they carry edits. The message keeps its
// pin (Message.Pinned: who, when, and the change of the pin, the cursor
// of the room's pin list). Deleting a message unpins it; retention that
// removes a message removes its pin with it.

// MaxPinsPerRoom is how many messages of one room may be pinned at once.
const MaxPinsPerRoom = 50

// Pin actions: the action header of a pin event (Event.Reason of an
// EventPin).
const (
	PinAdded   = "pin"
	PinRemoved = "unpin"
)

// Pin is a message's pin: who pinned it (a user id), when, and the
// room's change number the pin took (the order and cursor of Pins).
type Pin struct {
	By     string    `json:"by"`
	At     time.Time `json:"at"`
	Change int64     `json:"change"`
}

// PinMessage asks to pin (Add) or unpin message Seq of a room for UserID.
type PinMessage struct {
	RoomID string
	Seq    int64
	UserID string
	Add    bool
}

// PinStore is the part of Store that keeps pins. It checks no roles: the
// chat service does.
type PinStore interface {
	// Pin pins or unpins message p.Seq and returns the message in its
	// version after it. changed is false when there was nothing to do
	// (pinning a pinned message, unpinning one that is not): nothing is
	// stored, no change number is taken, no event is sent. An effective
	// change moves the room's last_change, sets the message's Change
	// (and, for a pin, Pinned.Change to the same number), and its commit
	// event is EventPin (UserID, Reason: PinAdded or PinRemoved). Fails
	// with CodeNotFound for an unknown room or seq, CodeConflict for a
	// deleted message and for a pin past MaxPinsPerRoom.
	Pin(ctx context.Context, p PinMessage) (msg Message, changed bool, err error)
	// Pins returns the room's pinned messages in their current version,
	// newest pin first (by Pinned.Change), those with Pinned.Change below
	// before (0: from the newest), at most limit (clamped as for Page).
	Pins(ctx context.Context, roomID string, before int64, limit int) ([]Message, error)
}

// CheckPins refuses, with CodeConflict, a pin that would pass
// MaxPinsPerRoom: pinned is how many messages of the room are pinned now.
// It is for the stores, inside the change's transaction.
func CheckPins(pinned int) error {
	if pinned >= MaxPinsPerRoom {
		return Errorf(CodeConflict, "at most %d pinned messages in a room: unpin one first", MaxPinsPerRoom)
	}
	return nil
}

// PinDeleted is the stores' refusal, CodeConflict, of a pin (add) or an
// unpin of a deleted message, which its deletion unpinned.
func PinDeleted(add bool) error {
	if add {
		return Errorf(CodeConflict, "the message is deleted: a deleted message cannot be pinned")
	}
	return Errorf(CodeConflict, "the message is deleted, which unpinned it: nothing to unpin")
}
