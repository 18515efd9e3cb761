package gateway

import (
	"strconv"
	"strings"
	"time"

	"parley"
	"parley/stomp"
)

// A frame shape is what MESSAGE frames share across recipients: the
// destination kind, the protocol version (escaping) and whether an ack
// header follows the subscription header.
func shapeOf(userQueue bool, v stomp.Version, ack bool) int {
	shape := int(v-stomp.V10) * 4
	if userQueue {
		shape += 2
	}
	if ack {
		shape++
	}
	return shape
}

// encodedMessage is a MESSAGE frame prepared once for every recipient of
// one shape.
type encodedMessage struct {
	p    *stomp.Prepared // varying headers: subscription (and ack)
	size int             // approximate encoded size, for the queue bound
}

// prepareMessage encodes m for a shape (design §4 MESSAGE headers).
func prepareMessage(m *parley.Message, shape int) *encodedMessage {
	v := stomp.V10 + stomp.Version(shape/4)
	dest := "/topic/rooms." + m.RoomID
	if shape&2 != 0 {
		dest = userQueue
	}
	keys := []string{"subscription"}
	if shape&1 != 0 {
		keys = append(keys, "ack")
	}
	var f stomp.Frame
	build := func(withClientID bool) {
		f.Reset()
		f.Command = stomp.Message
		f.Add("destination", dest)
		f.Add("message-id", m.ID)
		f.Add("content-type", "text/plain;charset=UTF-8")
		f.Add("room", m.RoomID)
		f.AddInt("seq", m.Seq)
		f.Add("sender", m.SenderID)
		f.Add("sender-name", m.SenderName)
		f.Add("sent-at", m.SentAt.UTC().Format(time.RFC3339Nano))
		if withClientID && m.ClientID != "" {
			f.Add("client-id", m.ClientID)
		}
		// A reply names its thread's root (design §3b): its seq, sender
		// and excerpt, the excerpt on one line (STOMP 1.0 headers cannot
		// carry a line feed).
		if r := m.ReplyTo; r != nil {
			f.AddInt("reply-to", r.Seq)
			f.Add("reply-to-sender", r.SenderName)
			f.Add("reply-to-excerpt", oneLine(r.Excerpt))
		}
		// A replay (since-seq, a history page) carries messages as they
		// stand: say what changed them, so that a tombstone is not an
		// empty message (design §3b "Replays say what they carry").
		if m.Change > 0 {
			f.AddInt("change", m.Change)
		}
		if m.EditedAt != nil {
			f.Add("edited-at", m.EditedAt.UTC().Format(time.RFC3339Nano))
		}
		if m.DeletedAt != nil {
			f.Add("deleted", "true")
			f.Add("deleted-at", m.DeletedAt.UTC().Format(time.RFC3339Nano))
		}
		if m.Files != "" {
			f.Add("files", string(m.Files))
		}
		// A pinned message says so, live and in every replay (design
		// §3b): who pinned it and when.
		if p := m.Pinned; p != nil {
			f.Add("pinned-by", p.By)
			f.Add("pinned-at", p.At.UTC().Format(time.RFC3339Nano))
		}
		// The members the text mentions (design §3b): user ids and
		// "@room", comma-separated.
		if m.Mentions != "" {
			f.Add("mentions", string(m.Mentions))
		}
		f.Body = []byte(m.Body)
	}
	build(true)
	p, err := stomp.Prepare(&f, v, keys...)
	if err != nil {
		// STOMP 1.0 cannot carry a line feed in a header: leave out the
		// client's idempotency key rather than the message.
		build(false)
		p, _ = stomp.Prepare(&f, v, keys...)
	}
	size := 64 + len(m.Body)
	for i := 0; i < f.NumHeaders(); i++ {
		k, val := f.Header(i)
		size += len(k) + len(val) + 2
	}
	return &encodedMessage{p: p, size: size + len(strconv.Itoa(len(m.Body)))}
}

// encodeControl encodes a frame the server sends once (CONNECTED, RECEIPT,
// ERROR).
func encodeControl(f *stomp.Frame, v stomp.Version) []byte {
	b, err := stomp.AppendFrame(nil, f, v)
	if err != nil {
		// Only a header value with a line feed in STOMP 1.0 can fail;
		// the frames built here have none, but never send nothing.
		var e stomp.Frame
		e.Command = f.Command
		b, _ = stomp.AppendFrame(nil, &e, v)
	}
	return b
}

// oneLine is s with its line breaks as spaces, for a header.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
