package parley

import (
	"strconv"
	"strings"
	"time"
)

// RoomCursor is a position in a room list sorted by last activity, newest
// first, ties broken by room id descending. Its string form is opaque to
// clients.
type RoomCursor struct {
	At     time.Time
	RoomID string
}

// String encodes the cursor.
func (c RoomCursor) String() string {
	return strconv.FormatInt(c.At.UnixMicro(), 36) + "." + c.RoomID
}

// ParseRoomCursor decodes a cursor made by RoomCursor.String. The empty
// string is the start of the list. Fails with CodeInvalid.
func ParseRoomCursor(s string) (RoomCursor, bool, error) {
	if s == "" {
		return RoomCursor{}, false, nil
	}
	at, id, ok := strings.Cut(s, ".")
	us, err := strconv.ParseInt(at, 36, 64)
	if !ok || err != nil || id == "" {
		return RoomCursor{}, false, Errorf(CodeInvalid, "malformed cursor")
	}
	return RoomCursor{At: time.UnixMicro(us).UTC(), RoomID: id}, true, nil
}

// Before reports whether room r sorts before (is newer than) the cursor
// position, that is, on an earlier page.
func (c RoomCursor) Before(r Room) bool {
	if !r.LastActivityAt.Equal(c.At) {
		return r.LastActivityAt.After(c.At)
	}
	return r.ID >= c.RoomID
}

// CursorOf returns the cursor that positions just after room r.
func CursorOf(r Room) RoomCursor { return RoomCursor{At: r.LastActivityAt, RoomID: r.ID} }

// RoomNewer orders rooms for a room list: newest activity first, ties by id
// descending.
func RoomNewer(a, b Room) bool {
	if !a.LastActivityAt.Equal(b.LastActivityAt) {
		return a.LastActivityAt.After(b.LastActivityAt)
	}
	return a.ID > b.ID
}
