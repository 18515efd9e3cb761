package parley

import (
	"context"
	"unicode"
	"unicode/utf8"
)

// MessageSearch is the part of Store that searches messages (design
// §3a): the words of a Query, whole and case folded, in a message's
// current text.
type MessageSearch interface {
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

// SearchHit is one result of a search over a user's rooms.
type SearchHit struct {
	Room    Room    `json:"room"`
	Message Message `json:"message"`
}

// Query is a parsed search: the words a message must all contain. It holds
// no index syntax: each store writes Terms in its own query language.
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

// IndexWaiter is a store whose search index trails the commit (design §5:
// search may trail a commit by a second): WaitIndexed returns once every
// message committed before the call is in the index, or ctx ends. A store
// that wraps another passes it on.
type IndexWaiter interface {
	WaitIndexed(ctx context.Context) error
}

// WaitIndexed waits for s's search index when s is an IndexWaiter; a
// store that indexes in the commit returns at once. For tests and tools
// that must search what they just wrote.
func WaitIndexed(ctx context.Context, s any) error {
	if x, ok := s.(IndexWaiter); ok {
		return x.WaitIndexed(ctx)
	}
	return nil
}
