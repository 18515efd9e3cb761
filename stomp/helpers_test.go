package stomp_test

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"parley/stomp"
)

// newFrame returns a frame with command cmd, body body and the headers kv
// given as name, value, name, value...
func newFrame(cmd stomp.Command, body string, kv ...string) *stomp.Frame {
	f := &stomp.Frame{Command: cmd}
	for i := 0; i+1 < len(kv); i += 2 {
		f.Add(kv[i], kv[i+1])
	}
	if body != "" {
		f.Body = []byte(body)
	}
	return f
}

// heartbeat is the Frame Read returns for an end-of-line between frames.
var heartbeat = &stomp.Frame{Command: stomp.Heartbeat}

// equalFrames reports whether a and b have the same command, the same headers
// in the same order and the same body.
func equalFrames(a, b *stomp.Frame) bool {
	if a.Command != b.Command || a.NumHeaders() != b.NumHeaders() || !bytes.Equal(a.Body, b.Body) {
		return false
	}
	for i := range a.NumHeaders() {
		ak, av := a.Header(i)
		bk, bv := b.Header(i)
		if !bytes.Equal(ak, bk) || !bytes.Equal(av, bv) {
			return false
		}
	}
	return true
}

func equalFrameLists(a, b []*stomp.Frame) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalFrames(a[i], b[i]) {
			return false
		}
	}
	return true
}

// readAll reads frames from r until an error, and returns clones of them and
// the error.
func readAll(r *stomp.Reader) ([]*stomp.Frame, error) {
	var frames []*stomp.Frame
	for {
		f, err := r.Read()
		if err != nil {
			return frames, err
		}
		frames = append(frames, f.Clone())
	}
}

// splitReader returns its data in chunks whose sizes cycle through sizes,
// each plus one (1 to 256 octets), or one octet at a time when sizes is
// empty: the input is split at arbitrary points, any points up to 256
// octets apart, as a network splits it into reads.
type splitReader struct {
	data  []byte
	sizes []byte
	i     int
}

func (s *splitReader) Read(p []byte) (int, error) {
	if len(s.data) == 0 {
		return 0, io.EOF
	}
	n := 1
	if len(s.sizes) > 0 {
		n = int(s.sizes[s.i%len(s.sizes)]) + 1
		s.i++
	}
	n = min(n, len(p), len(s.data))
	copy(p, s.data[:n])
	s.data = s.data[n:]
	return n, nil
}

// loopReader returns data over and over, forever.
type loopReader struct {
	data []byte
	off  int
}

func (l *loopReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		c := copy(p[n:], l.data[l.off:])
		n += c
		l.off = (l.off + c) % len(l.data)
	}
	return n, nil
}

// typicalMessage is a MESSAGE frame as the hub sends it: ten headers and a
// 100-octet body.
func typicalMessage() *stomp.Frame {
	f := newFrame(stomp.Message, "",
		"destination", "/topic/rooms.01HZY3K7W8Q2V5N6M4P9R0T1S2",
		"subscription", "sub-0",
		"message-id", "01HZY3M2B7C8D9E0F1G2H3J4K5",
		"content-type", "text/plain;charset=utf-8",
		"room", "01HZY3K7W8Q2V5N6M4P9R0T1S2",
		"seq", "1234567",
		"sender", "01HZY2Z9X8W7V6U5T4S3R2Q1P0",
		"sender-name", "ada lovelace",
		"sent-at", "2025-11-30T04:40:00.123Z",
	)
	f.Body = bytes.Repeat([]byte("hello, world! "), 8)[:100]
	f.AddInt("content-length", int64(len(f.Body)))
	return f
}

// typicalSend is a SEND frame as a client sends it: ten headers and a
// 100-octet body.
func typicalSend() *stomp.Frame {
	f := newFrame(stomp.Send, "",
		"destination", "/app/rooms.01HZY3K7W8Q2V5N6M4P9R0T1S2",
		"content-type", "text/plain;charset=utf-8",
		"content-length", "100",
		"receipt", "receipt-42",
		"client-id", "c6f1a6b2-8d0b-4a43-9a52-4f1d9c3a7e10",
		"x-trace", "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"priority", "4",
		"persistent", "true",
		"expires", "0",
		"reply-to", "/user/queue/replies",
	)
	f.Body = bytes.Repeat([]byte("x"), 100)
	return f
}

// mustEncode encodes f in version v or fails the test.
func mustEncode(t testing.TB, f *stomp.Frame, v stomp.Version) []byte {
	t.Helper()
	b, err := stomp.AppendFrame(nil, f, v)
	if err != nil {
		t.Fatalf("AppendFrame(%v, %v) failed: %v", f, v, err)
	}
	return b
}

// errorIs is errors.Is that treats a nil target as "no error".
func errorIs(err, target error) bool {
	if target == nil {
		return err == nil
	}
	return errors.Is(err, target)
}
