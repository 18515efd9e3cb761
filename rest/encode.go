package rest

import (
	"net/http"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"

	"parley"
)

// The two hottest responses, the room list and a history page, are encoded
// by hand: encoding/json's reflection was a fifth of the CPU of a request
// under load. The output is byte for byte what encoding/json writes
// (TestEncodeMatchesEncodingJSON keeps it so).

var bufPool = sync.Pool{New: func() any { b := make([]byte, 0, 16<<10); return &b }}

// writeEncoded writes a 200 JSON response built by encode in a pooled
// buffer.
func writeEncoded(w http.ResponseWriter, encode func([]byte) []byte) error {
	bp := bufPool.Get().(*[]byte)
	b := encode((*bp)[:0])
	b = append(b, '\n')
	h := w.Header()
	h["Content-Type"] = jsonType
	h["Cache-Control"] = noStore
	h["Content-Length"] = []string{strconv.Itoa(len(b))}
	w.WriteHeader(http.StatusOK)
	_, err := w.Write(b)
	if cap(b) <= 1<<20 { // do not keep a rare huge buffer
		*bp = b[:0]
		bufPool.Put(bp)
	}
	return err
}

// encode returns the body encode builds, with writeEncoded's newline, in
// a slice of its own.
func encode(encode func([]byte) []byte) []byte {
	bp := bufPool.Get().(*[]byte)
	b := append(encode((*bp)[:0]), '\n')
	out := make([]byte, len(b))
	copy(out, b)
	if cap(b) <= 1<<20 {
		*bp = b[:0]
		bufPool.Put(bp)
	}
	return out
}

func appendMessages(b []byte, ms []parley.Message) []byte {
	b = append(b, `{"messages":[`...)
	for i := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendMessage(b, &ms[i])
	}
	return append(b, "]}"...)
}

func appendMessage(b []byte, m *parley.Message) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, m.ID)
	b = append(b, `,"room_id":`...)
	b = appendString(b, m.RoomID)
	b = append(b, `,"seq":`...)
	b = strconv.AppendInt(b, m.Seq, 10)
	b = append(b, `,"sender_id":`...)
	b = appendString(b, m.SenderID)
	b = append(b, `,"sender_name":`...)
	b = appendString(b, m.SenderName)
	b = append(b, `,"body":`...)
	b = appendString(b, m.Body)
	b = append(b, `,"client_id":`...)
	b = appendString(b, m.ClientID)
	b = append(b, `,"sent_at":`...)
	b = appendTime(b, m.SentAt)
	b = append(b, `,"edited_at":`...)
	b = appendOptTime(b, m.EditedAt)
	b = append(b, `,"deleted_at":`...)
	b = appendOptTime(b, m.DeletedAt)
	b = append(b, `,"change":`...)
	b = strconv.AppendInt(b, m.Change, 10)
	// As encoding/json writes parley.Message (TestEncodeMatchesEncodingJSON):
	// reactions, reply_to and thread only when there are some.
	if len(m.Reactions) > 0 {
		b = append(b, `,"reactions":[`...)
	}
	for i := range m.Reactions {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"emoji":`...)
		b = appendString(b, m.Reactions[i].Emoji)
		b = append(b, `,"count":`...)
		b = strconv.AppendInt(b, int64(m.Reactions[i].Count), 10)
		b = append(b, `,"me":`...)
		b = strconv.AppendBool(b, m.Reactions[i].Me)
		b = append(b, '}')
	}
	if len(m.Reactions) > 0 {
		b = append(b, ']')
	}
	if r := m.ReplyTo; r != nil {
		b = append(b, `,"reply_to":{"seq":`...)
		b = strconv.AppendInt(b, r.Seq, 10)
		b = append(b, `,"sender_name":`...)
		b = appendString(b, r.SenderName)
		b = append(b, `,"excerpt":`...)
		b = appendString(b, r.Excerpt)
		b = append(b, '}')
	}
	if t := m.Thread; t != nil {
		b = append(b, `,"thread":{"replies":`...)
		b = strconv.AppendInt(b, int64(t.Replies), 10)
		b = append(b, `,"last_reply_at":`...)
		b = appendTime(b, t.LastReplyAt)
		b = append(b, `,"participants":[`...)
		for i, p := range t.Participants {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, p)
		}
		b = append(b, "]}"...)
	}
	if m.Files != "" { // encoding/json's own text (parley.FileList)
		b = append(b, `,"files":`...)
		b = append(b, m.Files...)
	}
	if m.Mentions != "" { // user ids and "@room": no character to escape
		b = append(b, `,"mentions":["`...)
		for i := 0; i < len(m.Mentions); i++ {
			if c := m.Mentions[i]; c == ',' {
				b = append(b, `","`...)
			} else {
				b = append(b, c)
			}
		}
		b = append(b, `"]`...)
	}
	if p := m.Pinned; p != nil {
		b = append(b, `,"pinned":`...)
		b = appendPin(b, p)
	}
	return append(b, '}')
}

// appendPin appends a message's pin as encoding/json writes parley.Pin.
func appendPin(b []byte, p *parley.Pin) []byte {
	b = append(b, `{"by":`...)
	b = appendString(b, p.By)
	b = append(b, `,"at":`...)
	b = appendTime(b, p.At)
	b = append(b, `,"change":`...)
	b = strconv.AppendInt(b, p.Change, 10)
	return append(b, '}')
}

// appendOptTime appends a time that may be null.
func appendOptTime(b []byte, t *time.Time) []byte {
	if t == nil {
		return append(b, "null"...)
	}
	return appendTime(b, *t)
}

func appendRoomList(b []byte, rooms []roomEntryView, next string) []byte {
	b = append(b, `{"rooms":[`...)
	for i := range rooms {
		e := &rooms[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"room":`...)
		b = appendRoomView(b, &e.Room)
		b = append(b, `,"last_message":`...)
		if e.LastMessage == nil {
			b = append(b, "null"...)
		} else {
			b = appendMessage(b, e.LastMessage)
		}
		b = append(b, `,"unread":`...)
		b = strconv.AppendInt(b, e.Unread, 10)
		b = append(b, `,"mentions":`...)
		b = strconv.AppendInt(b, e.Mentions, 10)
		b = append(b, `,"notifications":`...)
		b = appendString(b, e.Notifications)
		b = append(b, '}')
	}
	b = append(b, `],"next_cursor":`...)
	if next == "" {
		b = append(b, "null"...)
	} else {
		b = appendString(b, next)
	}
	return append(b, '}')
}

func appendRoomView(b []byte, v *roomView) []byte {
	r := &v.Room
	b = append(b, `{"id":`...)
	b = appendString(b, r.ID)
	b = append(b, `,"kind":`...)
	b = appendString(b, r.Kind)
	b = append(b, `,"title":`...)
	b = appendString(b, r.Title)
	b = append(b, `,"capacity":`...)
	b = strconv.AppendInt(b, int64(r.Capacity), 10)
	b = append(b, `,"member_count":`...)
	b = strconv.AppendInt(b, int64(r.MemberCount), 10)
	b = append(b, `,"last_seq":`...)
	b = strconv.AppendInt(b, r.LastSeq, 10)
	b = append(b, `,"last_change":`...)
	b = strconv.AppendInt(b, r.LastChange, 10)
	b = append(b, `,"last_activity_at":`...)
	b = appendTime(b, r.LastActivityAt)
	b = append(b, `,"retention_seconds":`...)
	b = strconv.AppendInt(b, r.RetentionSeconds, 10)
	if v.Peer != nil {
		b = append(b, `,"peer":{"id":`...)
		b = appendString(b, v.Peer.ID)
		b = append(b, `,"name":`...)
		b = appendString(b, v.Peer.Name)
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	if t.Location() == time.UTC { // every time Parley stores
		if year, month, day := t.Date(); year >= 0 && year <= 9999 {
			hour, min, sec := t.Clock()
			b = append(b, byte('0'+year/1000), byte('0'+year/100%10), byte('0'+year/10%10), byte('0'+year%10), '-',
				byte('0'+month/10), byte('0'+month%10), '-', byte('0'+day/10), byte('0'+day%10), 'T',
				byte('0'+hour/10), byte('0'+hour%10), ':', byte('0'+min/10), byte('0'+min%10), ':',
				byte('0'+sec/10), byte('0'+sec%10))
			if ns := t.Nanosecond(); ns != 0 {
				var frac [10]byte
				frac[0] = '.'
				for i := 9; i > 0; i-- {
					frac[i] = byte('0' + ns%10)
					ns /= 10
				}
				n := 10
				for frac[n-1] == '0' {
					n--
				}
				b = append(b, frac[:n]...)
			}
			return append(b, 'Z', '"')
		}
	}
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

// plain8 reports whether the 8 bytes of x (s[i:i+8], little endian) are
// ASCII that JSON copies as is: none below 0x20, none of " \ < > &, none
// of 0x80 and above. (Bit tricks from "Bit Twiddling Hacks": hasless and
// haszero; they may flag a plain byte next to a special one, never miss
// one, so a flagged word just takes the byte-by-byte path.)
func plain8(x uint64) bool {
	const lsb = 0x0101010101010101
	q, bs, lt, gt, amp := x^(lsb*'"'), x^(lsb*'\\'), x^(lsb*'<'), x^(lsb*'>'), x^(lsb*'&')
	// Each term has a byte's top bit set where that byte is a zero (or
	// below 0x20): haszero(y) = (y - lsb) & ^y, masked once at the end.
	special := x | (x-lsb*0x20)&^x |
		(q-lsb)&^q | (bs-lsb)&^bs | (lt-lsb)&^lt | (gt-lsb)&^gt | (amp-lsb)&^amp
	return special&(lsb*0x80) == 0
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string the way encoding/json does:
// control characters, <, > and & as \u00XX, U+2028 and U+2029 escaped,
// invalid UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if i+8 <= len(s) {
			x := uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
				uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
			if plain8(x) {
				i += 8
				continue
			}
		}
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
