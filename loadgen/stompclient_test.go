package loadgen

import (
	"bufio"
	"strings"
	"testing"

	"parley/stomp"
)

// TestReadMessageAsCodec: for well-formed streams of the shapes Parley's
// gateway and RabbitMQ send, readFrame gives the bench what the codec
// alone gives it, frame by frame, whether readMessage took a frame or
// left it to the codec; and readMessage takes the MESSAGE frames Parley
// sends, without which the test would prove nothing. (A malformed header
// line in a MESSAGE the scan takes, which the codec would refuse, is not
// caught: the gateway's own tests own its output.)
func TestReadMessageAsCodec(t *testing.T) {
	const head = "MESSAGE\ndestination:/topic/rooms.r1\nsubscription:0\nmessage-id:m1\nroom:r1\n"
	frames := []struct {
		name, frame string
		scanned     bool // readMessage takes it
	}{
		{"parley's", head + "seq:7\nsender-name:ann\ncontent-length:5\n\nhello\x00", true},
		{"an event", head + "event:typing\nseq:9\ncontent-length:2\n\n{}\x00", true},
		{"seq repeated", head + "seq:3\nseq:4\ncontent-length:1\n\nx\x00", true},
		{"length repeated", head + "seq:5\ncontent-length:1\ncontent-length:3\n\nx\x00", true},
		{"seq not a number", head + "seq:x1\ncontent-length:1\n\nx\x00", true},
		{"an escaped header", head + "sender-name:a\\cb\nseq:6\ncontent-length:1\n\nx\x00", true},
		{"a body with NULs", head + "seq:8\ncontent-length:3\n\na\x00b\x00", true},
		{"an empty body", head + "seq:10\ncontent-length:0\n\n\x00", true},
		{"no content-length", head + "seq:11\n\nno length\x00", false},
		{"CR LF", "MESSAGE\r\nseq:12\r\ncontent-length:1\r\n\r\nx\x00", false},
		{"a CR in a header", head + "seq:13\r\ncontent-length:1\n\nx\x00", false},
		{"a receipt", "RECEIPT\nreceipt-id:42\n\n\x00", false},
		{"a heart-beat, then a message", "\n" + head + "seq:14\ncontent-length:1\n\ny\x00", false},
		{"an error", "ERROR\nmessage:no\ncontent-length:3\n\nwhy\x00", false},
	}
	for _, f := range frames {
		t.Run(f.name, func(t *testing.T) {
			// Twice, so that the second frame starts where the first ended.
			stream := f.frame + f.frame
			want := readAll(t, stream, false)
			got := readAll(t, stream, true)
			if len(got) != len(want) || len(want) != 2 {
				t.Fatalf("read %d frames, the codec %d; want 2", len(got), len(want))
			}
			for i := range want {
				if got[i] != want[i] {
					t.Errorf("frame %d = %+v, the codec's %+v", i, got[i], want[i])
				}
			}
			c := connOver(f.frame)
			if took, _ := c.readMessage(); took != f.scanned {
				t.Errorf("readMessage took it: %v, want %v", took, f.scanned)
			}
		})
	}
}

// TestReadMessageWaitsForTheWholeFrame: a MESSAGE not yet buffered whole
// is left to the codec, which reads on.
func TestReadMessageWaitsForTheWholeFrame(t *testing.T) {
	frame := "MESSAGE\nseq:1\ncontent-length:5\n\nhello\x00"
	for n := 1; n < len(frame); n++ {
		c := connOver(frame[:n])
		if took, _ := c.readMessage(); took {
			t.Fatalf("readMessage took %q", frame[:n])
		}
	}
}

// seen is what the bench keeps of a frame.
type seen struct {
	cmd, receiptID, errMsg, body string
	event                        bool
	seq                          int64
}

// readAll reads every frame of stream, by readFrame or by the codec alone.
func readAll(t *testing.T, stream string, scan bool) []seen {
	t.Helper()
	c := connOver(stream)
	if !scan {
		c.br = nil // readMessage declines: the codec reads everything
	}
	var out []seen
	for {
		if err := c.readFrame(); err != nil {
			return out
		}
		out = append(out, seen{c.cmd, string(c.receiptID), c.errMsg, string(c.body), c.event, c.seq})
	}
}

// connOver is a stompConn reading the STOMP byte stream s.
func connOver(s string) *stompConn {
	c := &stompConn{br: bufio.NewReaderSize(strings.NewReader(s), 4096)}
	c.rd = stomp.NewReader(c.br, readLimits)
	return c
}
