package hub

import (
	"sync/atomic"
	"time"

	"parley"
)

// NumShapes is how many encodings of one message a transport may cache.
const NumShapes = 16

// Message is a committed message on its way to local subscribers, shared by
// all of them. A transport encodes it once per frame shape (destination,
// protocol version, ...) with Encoded, not once per recipient.
type Message struct {
	parley.Message
	// Committed is when the hub received the message from the store, the
	// start of the delivery latency; zero for a message read from history.
	Committed time.Time

	enc [NumShapes]atomic.Value
}

// NewMessage wraps m, committed at the given time (zero if not live).
func NewMessage(m parley.Message, committed time.Time) *Message {
	return &Message{Message: m, Committed: committed}
}

// Encoded returns the transport's encoding of m for shape (0 to
// NumShapes-1), computed by encode on first use and cached. It is safe for
// concurrent use; two concurrent first uses may both call encode, and one
// result wins. encode must return a non-nil pointer-shaped value.
func (m *Message) Encoded(shape int, encode func(*parley.Message) any) any {
	if v := m.enc[shape].Load(); v != nil {
		return v
	}
	v := encode(&m.Message)
	if m.enc[shape].CompareAndSwap(nil, v) {
		return v
	}
	return m.enc[shape].Load()
}
