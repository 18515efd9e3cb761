package stomp

import (
	"bytes"
	"strconv"
	"strings"
)

// Command is a STOMP command, or Heartbeat for an end-of-line received
// between frames. The zero Command is not valid.
type Command uint8

// The STOMP commands. Heartbeat is not a STOMP command: it stands for an
// end-of-line between frames, which a peer sends to show it is alive.
const (
	Heartbeat Command = iota + 1

	// Client commands.
	Connect
	Stomp
	Send
	Subscribe
	Unsubscribe
	Ack
	Nack
	Begin
	Commit
	Abort
	Disconnect

	// Server commands.
	Connected
	Message
	Receipt
	Error

	numCommands
)

var commandNames = [numCommands]string{
	Heartbeat:   "heartbeat",
	Connect:     "CONNECT",
	Stomp:       "STOMP",
	Send:        "SEND",
	Subscribe:   "SUBSCRIBE",
	Unsubscribe: "UNSUBSCRIBE",
	Ack:         "ACK",
	Nack:        "NACK",
	Begin:       "BEGIN",
	Commit:      "COMMIT",
	Abort:       "ABORT",
	Disconnect:  "DISCONNECT",
	Connected:   "CONNECTED",
	Message:     "MESSAGE",
	Receipt:     "RECEIPT",
	Error:       "ERROR",
}

// String returns the command as it appears on the wire, "heartbeat" for
// Heartbeat, or "Command(n)" for an invalid value.
func (c Command) String() string {
	if c > 0 && c < numCommands {
		return commandNames[c]
	}
	return "Command(" + strconv.Itoa(int(c)) + ")"
}

// IsClient reports whether c is a command a client sends to a server.
func (c Command) IsClient() bool { return c >= Connect && c <= Disconnect }

// IsServer reports whether c is a command a server sends to a client.
func (c Command) IsServer() bool { return c >= Connected && c <= Error }

// AllowsBody reports whether frames with command c may have a body: per the
// specification only SEND, MESSAGE and ERROR frames may. The Reader does not
// enforce this; the session decides what to do with a body where none is
// allowed.
func (c Command) AllowsBody() bool { return c == Send || c == Message || c == Error }

// parseCommand returns the command named b. The switch on string(b) does not
// allocate.
func parseCommand(b []byte) (Command, bool) {
	switch string(b) {
	case "CONNECT":
		return Connect, true
	case "STOMP":
		return Stomp, true
	case "SEND":
		return Send, true
	case "SUBSCRIBE":
		return Subscribe, true
	case "UNSUBSCRIBE":
		return Unsubscribe, true
	case "ACK":
		return Ack, true
	case "NACK":
		return Nack, true
	case "BEGIN":
		return Begin, true
	case "COMMIT":
		return Commit, true
	case "ABORT":
		return Abort, true
	case "DISCONNECT":
		return Disconnect, true
	case "CONNECTED":
		return Connected, true
	case "MESSAGE":
		return Message, true
	case "RECEIPT":
		return Receipt, true
	case "ERROR":
		return Error, true
	}
	return 0, false
}

// A Frame is a STOMP frame: a command, an ordered list of headers and a body.
// Header names and values are kept decoded (unescaped) in a buffer owned by
// the Frame, so building a Frame with Add and reusing it after Reset
// allocates nothing once the buffer has grown.
//
// A header may appear more than once; per the specification the first
// occurrence is its value, and Get and Lookup return it.
//
// The zero Frame is an empty frame ready to use. A Frame is not safe for
// concurrent modification.
type Frame struct {
	// Command is the frame's command, or Heartbeat.
	Command Command
	// Body is the frame's body. In a Frame returned by Reader.Read it is
	// owned by the Reader, like the headers.
	Body []byte

	buf  []byte   // header names and values, decoded, back to back
	hdrs []header // in wire order
}

// header locates one header in Frame.buf: the name is buf[k:v], the value
// buf[v:end].
type header struct{ k, v, end int }

// Reset empties f for reuse, keeping its buffers.
func (f *Frame) Reset() {
	f.Command = 0
	f.Body = nil
	f.buf = f.buf[:0]
	f.hdrs = f.hdrs[:0]
}

// Add appends the header key:value to f. The value is given decoded; the
// encoder escapes it as the protocol version requires.
func (f *Frame) Add(key, value string) { addHeader(f, key, value) }

// AddBytes is Add with the value as a byte slice, which it copies.
func (f *Frame) AddBytes(key string, value []byte) { addHeader(f, key, value) }

// AddInt appends the header key with the decimal value n, without allocating.
func (f *Frame) AddInt(key string, n int64) {
	k := len(f.buf)
	f.buf = append(f.buf, key...)
	v := len(f.buf)
	f.buf = strconv.AppendInt(f.buf, n, 10)
	f.hdrs = append(f.hdrs, header{k, v, len(f.buf)})
}

func addHeader[K, V string | []byte](f *Frame, key K, value V) {
	k := len(f.buf)
	f.buf = append(f.buf, key...)
	v := len(f.buf)
	f.buf = append(f.buf, value...)
	f.hdrs = append(f.hdrs, header{k, v, len(f.buf)})
}

// Lookup returns the value of the first header named key and whether there
// is one. The value is a view into f's buffer, valid until f changes (for a
// Frame returned by Reader.Read, until the next Read); it is capped so that
// appending to it copies.
func (f *Frame) Lookup(key string) (value []byte, ok bool) {
	for _, h := range f.hdrs {
		if string(f.buf[h.k:h.v]) == key {
			return f.buf[h.v:h.end:h.end], true
		}
	}
	return nil, false
}

// Get returns the value of the first header named key, or nil if there is
// none. Use Lookup to tell a missing header from an empty value.
func (f *Frame) Get(key string) []byte {
	v, _ := f.Lookup(key)
	return v
}

// NumHeaders returns the number of headers of f, repeated ones included.
func (f *Frame) NumHeaders() int { return len(f.hdrs) }

// Header returns the name and value of the i-th header of f in wire order,
// with the same lifetime as Lookup's result. It panics if i is out of range.
func (f *Frame) Header(i int) (key, value []byte) {
	h := f.hdrs[i]
	return f.buf[h.k:h.v:h.v], f.buf[h.v:h.end:h.end]
}

// Clone returns a deep copy of f that owns all its memory, for keeping a
// frame read by a Reader past the next Read.
func (f *Frame) Clone() *Frame {
	return &Frame{
		Command: f.Command,
		Body:    bytes.Clone(f.Body),
		buf:     bytes.Clone(f.buf),
		hdrs:    append([]header(nil), f.hdrs...),
	}
}

// String returns a readable form of f for logs and test failures, such as
// SEND{"destination":"/a" "receipt":"7"} "hello".
func (f *Frame) String() string {
	var b strings.Builder
	b.WriteString(f.Command.String())
	b.WriteByte('{')
	for i := range f.hdrs {
		if i > 0 {
			b.WriteByte(' ')
		}
		k, v := f.Header(i)
		b.WriteString(strconv.Quote(string(k)))
		b.WriteByte(':')
		b.WriteString(strconv.Quote(string(v)))
	}
	b.WriteString("} ")
	b.WriteString(strconv.Quote(string(f.Body)))
	return b.String()
}
