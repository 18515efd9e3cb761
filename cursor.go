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

// SearchCursor is a position in search results over several rooms, sorted
// newest first: by SentAt descending, ties by room id then seq,
// descending. Its string form is opaque to clients.
type SearchCursor struct {
	At     time.Time
	RoomID string
	Seq    int64
}

// String encodes the cursor.
func (c SearchCursor) String() string {
	return strconv.FormatInt(c.At.UnixMicro(), 36) + "." + strconv.FormatInt(c.Seq, 36) + "." + c.RoomID
}

// CursorAfter returns the cursor that positions just after message m.
func CursorAfter(m Message) SearchCursor {
	return SearchCursor{At: m.SentAt, RoomID: m.RoomID, Seq: m.Seq}
}

// ParseSearchCursor decodes a cursor made by SearchCursor.String; ok is
// false for "" (the start). Fails with CodeInvalid.
func ParseSearchCursor(s string) (c SearchCursor, ok bool, err error) {
	if s == "" {
		return SearchCursor{}, false, nil
	}
	parts := strings.SplitN(s, ".", 3)
	if len(parts) == 3 && parts[2] != "" {
		us, err1 := strconv.ParseInt(parts[0], 36, 64)
		seq, err2 := strconv.ParseInt(parts[1], 36, 64)
		if err1 == nil && err2 == nil && seq > 0 {
			return SearchCursor{At: time.UnixMicro(us).UTC(), RoomID: parts[2], Seq: seq}, true, nil
		}
	}
	return SearchCursor{}, false, Errorf(CodeInvalid, "malformed cursor")
}

// Older reports whether message m sorts after the cursor position, that
// is, on a later page.
func (c SearchCursor) Older(m Message) bool {
	switch {
	case !m.SentAt.Equal(c.At):
		return m.SentAt.Before(c.At)
	case m.RoomID != c.RoomID:
		return m.RoomID < c.RoomID
	}
	return m.Seq < c.Seq
}

// SearchNewer orders search hits: newest first, ties by room id and seq
// descending.
func SearchNewer(a, b Message) bool {
	return CursorAfter(a).Older(b)
}
