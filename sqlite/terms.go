package sqlite

import (
	"strconv"
	"strings"

	"parley"
)

// The full-text index (search_terms, migration 0005) holds room terms: each
// word of a message as "word_num", num being its room's number. A search
// in a room asks for its words' terms of that room, and a search over a
// user's rooms for the terms of each of their rooms (roomsMatch), so that
// it reads the postings of those rooms only: a word's postings in the
// other rooms, which are most of them, stay unread. "_" is neither a letter
// nor a digit, so it is in no word: a term has one reading, and
// "word_" is the prefix of exactly that word's terms in every room (the
// query of a user in more rooms than maxRoomTerms allows).
//
// The program makes the terms: index and query split text alike
// (parley.EachWord), and FTS5's ascii tokenizer (with "_" a token
// character) only separates them at the spaces.

// termSep joins a word to its room's number.
const termSep = '_'

// maxRoomTerms bounds the terms of a query over a user's rooms: words ×
// rooms. A user in more rooms than that is searched by the words' prefixes
// (every room's postings of the words, as many as the index holds of
// them), filtered to their rooms.
const maxRoomTerms = 256

// appendTerms appends the index text of body, a message of room number
// num: its words as room terms, separated by spaces (a word twice is
// twice: the index keeps it once).
func appendTerms(b []byte, num int64, body string) []byte {
	parley.EachWord(body, func(w string) {
		if len(b) > 0 {
			b = append(b, ' ')
		}
		b = append(b, w...)
		b = append(b, termSep)
		b = strconv.AppendInt(b, num, 10)
	})
	return b
}

// termsOf returns the index text of body in room number num.
func termsOf(num int64, body string) string {
	return string(appendTerms(nil, num, body))
}

// appendPhrase appends word w's term of room num as an FTS5 string; num <
// 0 appends the prefix of w's terms in every room instead. A word holds no
// quote, so the string is w's term as it is.
func appendPhrase(b *strings.Builder, w string, num int64) {
	b.WriteByte('"')
	b.WriteString(w)
	b.WriteByte(termSep)
	if num < 0 {
		b.WriteString(`"*`)
		return
	}
	var d [20]byte
	b.Write(strconv.AppendInt(d[:0], num, 10))
	b.WriteByte('"')
}

// roomMatch returns the FTS5 query of the messages of room number num that
// hold every word of q.
func roomMatch(q parley.Query, num int64) string {
	var b strings.Builder
	for i, w := range q.Terms {
		if i > 0 {
			b.WriteByte(' ')
		}
		appendPhrase(&b, w, num)
	}
	return b.String()
}

// roomsMatch returns the FTS5 query of the messages of the rooms nums (one
// or more) that hold every word of q: for each room, its terms of the
// words, ANDed, and the rooms ORed. Past maxRoomTerms it returns the
// words' prefixes instead, which match in every room: the caller filters
// by room.
func roomsMatch(q parley.Query, nums []int64) string {
	if len(q.Terms)*len(nums) > maxRoomTerms {
		return roomMatch(q, -1)
	}
	var b strings.Builder
	for i, num := range nums {
		if i > 0 {
			b.WriteString(" OR ")
		}
		if len(q.Terms) > 1 {
			b.WriteByte('(')
		}
		for j, w := range q.Terms {
			if j > 0 {
				b.WriteByte(' ')
			}
			appendPhrase(&b, w, num)
		}
		if len(q.Terms) > 1 {
			b.WriteByte(')')
		}
	}
	return b.String()
}
