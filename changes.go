package parley

import (
	"context"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// MessageChanges is the part of Store that edits and deletes stored
// messages, lists the changes of a room, and searches messages (design
// §3a). Every edit and deletion takes the room's next change number
// (Room.LastChange + 1) in the same transaction that applies it, so the
// numbers of a room run 1, 2, 3, ... with no holes under any concurrency,
// as seqs do; the message records it (Message.Change). The commit events
// are EventEdited and EventDeleted, with the message in its new version.
type MessageChanges interface {
	// EditMessage replaces the body of message e.Seq of room e.RoomID and
	// returns it in its new version, with EditedAt set. Only its sender
	// may: CodeForbidden for anyone else. Fails with CodeNotFound for an
	// unknown room or seq, and CodeConflict for a deleted message. A
	// repeat of a keyed change (see ChangeKey) applies nothing.
	EditMessage(ctx context.Context, e Edit) (Message, error)
	// DeleteMessage makes message d.Seq of room d.RoomID a tombstone: the
	// same seq, an empty body, DeletedAt set; its text is gone from the
	// store and the search index. Its sender may, and anyone when
	// d.Moderator (the caller checked the role): CodeForbidden otherwise.
	// Deleting a tombstone changes nothing and returns it with deleted
	// false. Fails with CodeNotFound for an unknown room or seq. A repeat
	// of a keyed change (see ChangeKey) applies nothing: deleted false.
	DeleteMessage(ctx context.Context, d Deletion) (msg Message, deleted bool, err error)
	// Changed returns the room's messages whose Change is above after, in
	// change order, at most limit (clamped as for Page) of them, in their
	// current version. Fails with CodeNotFound for an unknown room.
	Changed(ctx context.Context, roomID string, after int64, limit int) ([]Message, error)
	// SearchRoom returns the room's messages that match q, newest first,
	// with a seq below before (0: from the newest), at most limit (clamped
	// as for Page). Deleted messages never match; an edited one matches its
	// current text. Fails with CodeNotFound for an unknown room.
	SearchRoom(ctx context.Context, roomID string, q Query, before int64, limit int) ([]Message, error)
	// Search returns the messages that match q in every room userID is a
	// member of now, newest first (SearchCursor's order), one page after
	// cursor, and the cursor of the next page ("" at the end). Fails with
	// CodeInvalid for a malformed cursor.
	Search(ctx context.Context, userID string, q Query, cursor string, limit int) ([]SearchHit, string, error)
}

// Edit asks to replace a message's body; EditorID is who asks. ClientID,
// when not empty, is the editor's idempotency key (see ChangeKey).
type Edit struct {
	RoomID   string
	Seq      int64
	EditorID string
	Body     string
	ClientID string
}

// Deletion asks to delete a message; ActorID is who asks, Moderator whether
// they are the room's owner or an admin (checked by the caller). ClientID,
// when not empty, is the actor's idempotency key (see ChangeKey).
type Deletion struct {
	RoomID    string
	Seq       int64
	ActorID   string
	Moderator bool
	ClientID  string
}

// ChangeKey is the idempotency key of an applied edit or deletion (design
// §5), stored in the transaction that applies the change: the same
// client_id from the same user in the same room never applies a second
// change, across restarts and nodes. A change's keys are a space of their
// own: a send's client_id never matches one.
//
// A repeat of a keyed change (the same seq, the same kind, for an edit the
// same body) applies nothing and returns the message as it is now: the
// version the change produced, with its change number, unless a later
// change has touched the message since, in which case the later version
// (a newer edit, or the tombstone: a repeated edit of a message deleted
// since succeeds with the tombstone), as a resent send returns its message
// as it is now. The key reused for another change (another seq, edit for
// deletion or back, or an edit with another body while the key's edit
// still stands) fails with CodeConflict and changes nothing. Only an
// applied change keeps its key: the deletion of a tombstone (nothing to
// apply) and a refused change keep none. A key holds no text: the body of
// a keyed edit is compared with the message's while that edit stands.
type ChangeKey struct {
	Seq     int64 // the message the change applied to
	Deleted bool  // a deletion; an edit otherwise
	Change  int64 // the change number it took
}

// Repeat decides what a change keyed like k (and found stored) returns,
// given the message at the change's seq as it is now: nil when it is a
// repeat of k's change (return cur, apply nothing), or the CodeConflict
// of a key reused for another change. body is the asked edit's body.
func (k ChangeKey) Repeat(clientID string, seq int64, deletion bool, body string, cur *Message) error {
	switch {
	case k.Seq != seq:
		return Errorf(CodeConflict, "client_id %q was used before for a change of message %d; use a new client_id for a new change", clientID, k.Seq)
	case k.Deleted != deletion:
		what := "an edit"
		if k.Deleted {
			what = "a deletion"
		}
		return Errorf(CodeConflict, "client_id %q was used before for %s of this message; use a new client_id for a new change", clientID, what)
	case !deletion && cur.Change == k.Change && cur.Body != body:
		return Errorf(CodeConflict, "client_id %q was used before for an edit with another body (change %d); use a new client_id for a new change", clientID, k.Change)
	}
	return nil
}

// SearchHit is one result of a search over a user's rooms.
type SearchHit struct {
	Room    Room    `json:"room"`
	Message Message `json:"message"`
}

// Query is a parsed search: the words a message must all contain.
type Query struct {
	Terms []string
}

// Search query bounds.
const (
	MaxQueryBytes = 256
	MaxQueryTerms = 8
)

// ParseQuery reads a search as users type it. A word is a run of letters
// and digits (any script: Hangul, Latin, ...); everything else separates
// words, so no character of the input is an operator of the index's query
// language (FTS5, tsquery). A message matches when it contains every word,
// whole, case folded. Fails with CodeInvalid for input without words, over
// MaxQueryBytes, with more than MaxQueryTerms words, or not UTF-8.
func ParseQuery(s string) (Query, error) {
	if len(s) > MaxQueryBytes || !utf8.ValidString(s) {
		return Query{}, Errorf(CodeInvalid, "q must be at most %d bytes of UTF-8", MaxQueryBytes)
	}
	var q Query
	seen := map[string]bool{}
	Words(s, func(w string) {
		if !seen[w] {
			seen[w] = true
			q.Terms = append(q.Terms, w)
		}
	})
	switch {
	case len(q.Terms) == 0:
		return Query{}, Errorf(CodeInvalid, "q must have at least one word (letters or digits)")
	case len(q.Terms) > MaxQueryTerms:
		return Query{}, Errorf(CodeInvalid, "q may have at most %d words", MaxQueryTerms)
	}
	return q, nil
}

// Words calls fn with each word of s in order, case folded, repeats
// included: the words ParseQuery makes terms of, and the words an index
// kept outside the database (package cache) files a message body under.
//
// A word is a longest run of letters and numbers (unicode.IsLetter,
// unicode.IsNumber), each rune mapped by unicode.ToLower; anything else,
// invalid UTF-8 included, separates words.
func Words(s string, fn func(word string)) {
	EachWord(s, nil, func(w []byte) { fn(string(w)) })
}

// EachWord is Words for a hot path: it calls fn with each word in buf,
// which it reuses (fn must not keep w), and returns buf for the next call.
// It allocates nothing once buf holds the longest word.
func EachWord(s string, buf []byte, fn func(w []byte)) []byte {
	buf = buf[:0]
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			i++
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
				buf = append(buf, c)
				continue
			case 'A' <= c && c <= 'Z':
				buf = append(buf, c+('a'-'A'))
				continue
			}
		} else {
			r, n := utf8.DecodeRuneInString(s[i:])
			i += n
			if unicode.IsLetter(r) || unicode.IsNumber(r) {
				buf = utf8.AppendRune(buf, unicode.ToLower(r))
				continue
			}
		}
		if len(buf) > 0 {
			fn(buf)
			buf = buf[:0]
		}
	}
	if len(buf) > 0 {
		fn(buf)
	}
	return buf[:0]
}

// FTS returns q in SQLite FTS5's query syntax: each word a quoted string,
// all of them required.
func (q Query) FTS() string {
	var b strings.Builder
	for i, t := range q.Terms {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteByte('"')
		b.WriteString(strings.ReplaceAll(t, `"`, `""`)) // never needed: words hold no quote
		b.WriteByte('"')
	}
	return b.String()
}

// Text returns the words separated by spaces (for PostgreSQL's
// plainto_tsquery, which ANDs them and knows no operators).
func (q Query) Text() string { return strings.Join(q.Terms, " ") }

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
