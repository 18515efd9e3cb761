package parley

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
)

// Mentions (design §3b). A message's text may name users with @name; the
// server (package chat) resolves each to the user id of a current member
// of the room and stores the ids with the message (Message.Mentions).
//
// The grammar: an "@" at the start of the text or after a character that
// is neither a name character nor "@", followed by the longest run of
// name characters (A-Z a-z 0-9 _ . -, as names are registered), with any
// trailing periods cut off (the end of a sentence); the run must then be 3
// to 32 characters, as a name is. Names compare as they do at sign-in:
// exactly, case included. "@room" is reserved: it names every member of
// the room (MentionRoom), whatever user is called "room".
//
// A member's room-list entry counts the unread messages that mention
// them (RoomEntry.Mentions), and the member's notification level for the
// room (RoomEntry.Notifications) decides what is counted and sent.

// Mention bounds and names.
const (
	// MentionRoom is the entry of Message.Mentions that stands for
	// "@room": every member of the room.
	MentionRoom = "@room"
	// MaxMentions is how many distinct names one message may mention
	// (@room included).
	MaxMentions = 50
)

// Notification levels of a member in a room (RoomEntry.Notifications).
const (
	NotifyAll      = "all"      // the default: every message counts as unread, mentions are counted and sent
	NotifyMentions = "mentions" // as all on the server; clients notify of mentions only
	NotifyNone     = "none"     // no mention is counted nor sent
)

// CheckNotifyLevel refuses, with CodeInvalid, what is not a level.
func CheckNotifyLevel(level string) error {
	switch level {
	case NotifyAll, NotifyMentions, NotifyNone:
		return nil
	}
	return Errorf(CodeInvalid, "level must be %q, %q or %q", NotifyAll, NotifyMentions, NotifyNone)
}

// MentionList is a message's mentions as the stores keep them in one
// column: the user ids (and MentionRoom) joined by commas, "" for none.
// In JSON it is an array of strings.
type MentionList string

// JoinMentions returns the MentionList of ids.
func JoinMentions(ids []string) MentionList { return MentionList(strings.Join(ids, ",")) }

// IDs returns the entries of l, nil for none.
func (l MentionList) IDs() []string {
	if l == "" {
		return nil
	}
	return strings.Split(string(l), ",")
}

// Has reports whether l names userID, or the whole room.
func (l MentionList) Has(userID string) bool {
	for _, id := range l.IDs() {
		if id == userID || id == MentionRoom {
			return true
		}
	}
	return false
}

// Room reports whether l holds MentionRoom.
func (l MentionList) Room() bool {
	for _, id := range l.IDs() {
		if id == MentionRoom {
			return true
		}
	}
	return false
}

// MarshalJSON writes l as an array of strings.
func (l MentionList) MarshalJSON() ([]byte, error) {
	ids := l.IDs()
	if ids == nil {
		ids = []string{}
	}
	return json.Marshal(ids)
}

// UnmarshalJSON reads what MarshalJSON wrote.
func (l *MentionList) UnmarshalJSON(b []byte) error {
	var ids []string
	if err := json.Unmarshal(b, &ids); err != nil {
		return fmt.Errorf("decode mentions: %w", err)
	}
	*l = JoinMentions(ids)
	return nil
}

// MentionNames returns the distinct names body mentions, in the order of
// their first mention, per the grammar above; "room" stands for "@room".
// It stops after MaxMentions+1 names (enough to refuse a message past
// the bound). A body with no "@" costs one byte scan.
func MentionNames(body string) []string {
	if strings.IndexByte(body, '@') < 0 {
		return nil
	}
	var out []string
	for i := 0; i < len(body); i++ {
		if body[i] != '@' || (i > 0 && (nameChar(body[i-1]) || body[i-1] == '@')) {
			continue
		}
		j := i + 1
		for j < len(body) && nameChar(body[j]) {
			j++
		}
		name := strings.TrimRight(body[i+1:j], ".")
		i = j - 1
		if len(name) < 3 || len(name) > 32 {
			continue
		}
		dup := false
		for _, n := range out {
			if n == name {
				dup = true
				break
			}
		}
		if !dup {
			out = append(out, name)
			if len(out) > MaxMentions {
				return out
			}
		}
	}
	return out
}

func nameChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
}

// RoomNotify is a member's notification state in one room: the level and
// the unread messages that mention them (0 at level none).
type RoomNotify struct {
	Level    string
	Mentions int64
}

// MentionStore is the part of Store that keeps notification levels and
// counts mentions.
type MentionStore interface {
	// SetNotifyLevel sets userID's notification level in the room (a
	// level CheckNotifyLevel accepts). Fails with CodeNotFound when the
	// user is not a member.
	SetNotifyLevel(ctx context.Context, roomID, userID, level string) error
	// NotifyStates returns userID's notification state in each of the
	// user's rooms that is not the default (level all, no unread
	// mention); rooms at the default are absent. Unread mentions are the
	// messages with a seq above the user's read position, not deleted,
	// whose mentions name the user or the room.
	NotifyStates(ctx context.Context, userID string) (map[string]RoomNotify, error)
	// NotifyLevels returns the level of each of userIDs in the room that
	// is not NotifyAll; members at the default and non-members are
	// absent.
	NotifyLevels(ctx context.Context, roomID string, userIDs []string) (map[string]string, error)
}
