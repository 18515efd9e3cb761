package stomp_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"parley/stomp"
)

// readCase is a stream, the frames reading it yields, and the error that ends
// it (io.EOF for a clean end).
type readCase struct {
	name    string // the sentence of the STOMP 1.2 specification, quoted or paraphrased
	version stomp.Version
	in      string
	want    []*stomp.Frame
	err     error
}

// specCases are keyed to the sentences of the STOMP 1.2 specification
// (https://stomp.github.io/stomp-specification-1.2.html).
var specCases = []readCase{
	// STOMP Frames.
	{
		name: "the frame starts with a command string terminated by an EOL",
		in:   "SEND\ndestination:/a\n\nhello\x00",
		want: []*stomp.Frame{newFrame(stomp.Send, "hello", "destination", "/a")},
		err:  io.EOF,
	},
	{
		name: "an EOL is an optional carriage return followed by a required line feed",
		in:   "SEND\r\ndestination:/a\r\nreceipt:7\r\n\r\nhello\x00",
		want: []*stomp.Frame{newFrame(stomp.Send, "hello", "destination", "/a", "receipt", "7")},
		err:  io.EOF,
	},
	{
		name: "LF and CRLF line endings may be mixed",
		in:   "SEND\r\ndestination:/a\n\r\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Send, "", "destination", "/a")},
		err:  io.EOF,
	},
	{
		name: "a blank line indicates the end of the headers and the beginning of the body",
		in:   "SEND\n\n\nline\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Send, "\nline\n")},
		err:  io.EOF,
	},
	{
		name: "the body is then followed by the NULL octet",
		in:   "SEND\n\nno terminator",
		err:  io.ErrUnexpectedEOF,
	},
	{
		name: "the NULL octet can be optionally followed by multiple EOLs",
		in:   "SEND\n\nx\x00\n\r\n\nSEND\n\ny\x00",
		want: []*stomp.Frame{
			newFrame(stomp.Send, "x"), heartbeat, heartbeat, heartbeat, newFrame(stomp.Send, "y"),
		},
		err: io.EOF,
	},
	{
		name: "frames follow each other with nothing in between",
		in:   "SEND\n\na\x00MESSAGE\nsubscription:0\n\nb\x00",
		want: []*stomp.Frame{newFrame(stomp.Send, "a"), newFrame(stomp.Message, "b", "subscription", "0")},
		err:  io.EOF,
	},
	{
		name: "frames without a body end in the NULL octet right after the blank line",
		in:   "DISCONNECT\nreceipt:77\n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Disconnect, "", "receipt", "77")},
		err:  io.EOF,
	},
	{
		name: "commands are case sensitive",
		in:   "send\n\n\x00",
		err:  stomp.ErrUnknownCommand,
	},
	{
		name: "an unknown command is a protocol error",
		in:   "PUBLISH\n\n\x00",
		err:  stomp.ErrUnknownCommand,
	},
	{
		name: "the stream may end between frames",
		in:   "",
		err:  io.EOF,
	},
	{
		name: "the stream may not end inside the headers",
		in:   "SEND\ndestination:/a\n",
		err:  io.ErrUnexpectedEOF,
	},
	{
		name: "the stream may not end inside the command line",
		in:   "SEN",
		err:  io.ErrUnexpectedEOF,
	},

	// Value Encoding.
	{
		name: `\r translates to carriage return`,
		in:   "MESSAGE\nk:a\\rb\n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Message, "", "k", "a\rb")},
		err:  io.EOF,
	},
	{
		name: `\n translates to line feed`,
		in:   "MESSAGE\nk:a\\nb\n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Message, "", "k", "a\nb")},
		err:  io.EOF,
	},
	{
		name: `\c translates to a colon`,
		in:   "MESSAGE\nk:a\\cb\n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Message, "", "k", "a:b")},
		err:  io.EOF,
	},
	{
		name: `\\ translates to a backslash`,
		in:   "MESSAGE\nk:a\\\\b\\\\\n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Message, "", "k", `a\b\`)},
		err:  io.EOF,
	},
	{
		name: "escaping applies to header names as well as values",
		in:   "SEND\na\\cb\\\\c\\nd:v\n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Send, "", "a:b\\c\nd", "v")},
		err:  io.EOF,
	},
	{
		name: `undefined escape sequences such as \t MUST be treated as a fatal protocol error`,
		in:   "SEND\nk:a\\tb\n\n\x00",
		err:  stomp.ErrBadEscape,
	},
	{
		name: "a backslash ending a value is an undefined escape sequence",
		in:   "SEND\nk:a\\\n\n\x00",
		err:  stomp.ErrBadEscape,
	},
	{
		name: "an undefined escape sequence in a header name is fatal too",
		in:   "SEND\na\\x:v\n\n\x00",
		err:  stomp.ErrBadEscape,
	},
	{
		name: "the CONNECT frame does not escape carriage return, line feed or colon octets",
		in:   "CONNECT\naccept-version:1.2\nhost:localhost:61613\npasscode:a\\tb\\c\n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Connect, "",
			"accept-version", "1.2", "host", "localhost:61613", "passcode", `a\tb\c`)},
		err: io.EOF,
	},
	{
		name: "the CONNECTED frame does not escape either",
		in:   "CONNECTED\nversion:1.2\nserver:parley/1\\n\n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Connected, "", "version", "1.2", "server", `parley/1\n`)},
		err:  io.EOF,
	},
	{
		name: "a STOMP frame is escaped: only CONNECT and CONNECTED are exempt",
		in:   "STOMP\naccept-version:1.2\nlogin:a\\cb\n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Stomp, "", "accept-version", "1.2", "login", "a:b")},
		err:  io.EOF,
	},
	{
		name:    "STOMP 1.1 has no carriage return escape",
		version: stomp.V11,
		in:      "SEND\nk:a\\rb\n\n\x00",
		err:     stomp.ErrBadEscape,
	},
	{
		name:    "STOMP 1.1 decodes the other escapes",
		version: stomp.V11,
		in:      "SEND\nk:a\\cb\\nc\\\\\n\n\x00",
		want:    []*stomp.Frame{newFrame(stomp.Send, "", "k", "a:b\nc\\")},
		err:     io.EOF,
	},
	{
		name:    "in STOMP 1.1 only LF ends a line, so a CR before it belongs to the value",
		version: stomp.V11,
		in:      "SEND\r\nk:v\r\n\r\n\x00",
		want:    []*stomp.Frame{newFrame(stomp.Send, "", "k", "v\r")},
		err:     io.EOF,
	},
	{
		name:    "STOMP 1.0 has no escaping at all",
		version: stomp.V10,
		in:      "SEND\nk:a\\tb\\n\n\n\x00",
		want:    []*stomp.Frame{newFrame(stomp.Send, "", "k", `a\tb\n`)},
		err:     io.EOF,
	},

	// Headers.
	{
		name: "a header value may contain colons: the first colon ends the name",
		in:   "SEND\ndestination:/a:b::c\n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Send, "", "destination", "/a:b::c")},
		err:  io.EOF,
	},
	{
		name: "a header value may be empty",
		in:   "SEND\nreceipt:\n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Send, "", "receipt", "")},
		err:  io.EOF,
	},
	{
		name: "clients and servers MUST never trim or pad headers with spaces",
		in:   "SEND\n key : value \n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Send, "", " key ", " value ")},
		err:  io.EOF,
	},
	{
		name: "a header name is at least one octet",
		in:   "SEND\n:value\n\n\x00",
		err:  stomp.ErrMalformed,
	},
	{
		name: "a header is a name and a value separated by a colon",
		in:   "SEND\nno colon here\n\n\x00",
		err:  stomp.ErrMalformed,
	},
	{
		name: "if a client or a server receives repeated frame header entries, only the first SHOULD be used",
		in:   "MESSAGE\nfoo:World\nfoo:Hello\n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Message, "", "foo", "World", "foo", "Hello")},
		err:  io.EOF,
	},
	{
		name: "the first of repeated content-length headers decides the body",
		in:   "SEND\ncontent-length:2\ncontent-length:5\n\nab\x00",
		want: []*stomp.Frame{newFrame(stomp.Send, "ab", "content-length", "2", "content-length", "5")},
		err:  io.EOF,
	},

	// Size Limits: content-length.
	{
		name: "if a content-length header is included, this number of octets MUST be read, regardless of NULL octets in the body",
		in:   "SEND\ncontent-length:5\n\na\x00b\x00c\x00",
		want: []*stomp.Frame{newFrame(stomp.Send, "a\x00b\x00c", "content-length", "5")},
		err:  io.EOF,
	},
	{
		name: "the frame still needs to be terminated with a NULL octet",
		in:   "SEND\ncontent-length:1\n\nab\x00",
		err:  stomp.ErrMalformed,
	},
	{
		name: "a content-length of zero means an empty body",
		in:   "SEND\ncontent-length:0\n\n\x00",
		want: []*stomp.Frame{newFrame(stomp.Send, "", "content-length", "0")},
		err:  io.EOF,
	},
	{
		name: "content-length is an octet count: digits only",
		in:   "SEND\ncontent-length:-1\n\n\x00",
		err:  stomp.ErrMalformed,
	},
	{
		name: "content-length may not be empty",
		in:   "SEND\ncontent-length:\n\n\x00",
		err:  stomp.ErrMalformed,
	},
	{
		name: "without content-length the body ends at the first NULL octet",
		in:   "SEND\n\nab\x00cd\x00\n",
		want: []*stomp.Frame{newFrame(stomp.Send, "ab")},
		err:  stomp.ErrUnknownCommand, // "cd\x00" read as the next command line
	},
	{
		name: "the stream may not end inside a content-length body",
		in:   "SEND\ncontent-length:10\n\nabc",
		err:  io.ErrUnexpectedEOF,
	},

	// Heart-beating.
	{
		name: "heart-beats are an EOL: a line feed",
		in:   "\n\nSEND\n\n\x00\n",
		want: []*stomp.Frame{heartbeat, heartbeat, newFrame(stomp.Send, ""), heartbeat},
		err:  io.EOF,
	},
	{
		name: "heart-beats are an EOL: a carriage return and a line feed",
		in:   "\r\n\r\n",
		want: []*stomp.Frame{heartbeat, heartbeat},
		err:  io.EOF,
	},
	{
		name: "a lone carriage return is not an EOL",
		in:   "\r",
		err:  io.ErrUnexpectedEOF,
	},
}

func TestReadSpec(t *testing.T) {
	for _, tc := range specCases {
		t.Run(tc.name, func(t *testing.T) {
			r := stomp.NewReader(strings.NewReader(tc.in), stomp.Limits{})
			if tc.version != 0 {
				r.SetVersion(tc.version)
			}
			got, err := readAll(r)
			if !equalFrameLists(got, tc.want) || !errorIs(err, tc.err) {
				t.Errorf("Read(%q) = %v, %v; want %v, %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

// TestReadSpecOneByte reads the same cases one byte at a time through the
// smallest bufio.Reader, so every line and body spans many reads.
func TestReadSpecOneByte(t *testing.T) {
	for _, tc := range specCases {
		t.Run(tc.name, func(t *testing.T) {
			br := bufio.NewReaderSize(iotest.OneByteReader(strings.NewReader(tc.in)), 16)
			r := stomp.NewReader(br, stomp.Limits{})
			if tc.version != 0 {
				r.SetVersion(tc.version)
			}
			got, err := readAll(r)
			if !equalFrameLists(got, tc.want) || !errorIs(err, tc.err) {
				t.Errorf("Read(%q) one byte at a time = %v, %v; want %v, %v", tc.in, got, err, tc.want, tc.err)
			}
		})
	}
}

func TestReadEveryCommand(t *testing.T) {
	for _, cmd := range []stomp.Command{
		stomp.Connect, stomp.Stomp, stomp.Send, stomp.Subscribe, stomp.Unsubscribe,
		stomp.Ack, stomp.Nack, stomp.Begin, stomp.Commit, stomp.Abort, stomp.Disconnect,
		stomp.Connected, stomp.Message, stomp.Receipt, stomp.Error,
	} {
		t.Run(cmd.String(), func(t *testing.T) {
			in := cmd.String() + "\nid:1\n\n\x00"
			f, err := stomp.NewReader(strings.NewReader(in), stomp.Limits{}).Read()
			want := newFrame(cmd, "", "id", "1")
			if err != nil || !equalFrames(f, want) {
				t.Errorf("Read(%q) = %v, %v; want %v, nil", in, f, err, want)
			}
			if cmd.IsClient() == cmd.IsServer() {
				t.Errorf("%v: IsClient() = IsServer() = %v", cmd, cmd.IsClient())
			}
		})
	}
}

func TestReadLimits(t *testing.T) {
	small := stomp.Limits{MaxCommand: 5, MaxHeaders: 2, MaxHeaderLine: 8, MaxBody: 4}
	frame := stomp.Limits{MaxFrame: 40}
	tests := []struct {
		name  string
		lim   stomp.Limits
		in    string
		what  string // "" for no error
		limit int
	}{
		{"command at the limit", small, "SEND\n\n\x00", "", 0},
		{"command over the limit", small, "SEND\r\n\n\x00", "command line", 5},
		{"command line of junk", small, strings.Repeat("A", 100), "command line", 5},
		{"headers at the limit", small, "SEND\na:1\nb:2\n\n\x00", "", 0},
		{"headers over the limit", small, "SEND\na:1\nb:2\nc:3\n\n\x00", "header count", 2},
		{"repeated headers count", small, "SEND\na:1\na:1\na:1\n\n\x00", "header count", 2},
		{"header line at the limit", small, "SEND\nk:12345\n\n\x00", "", 0},
		{"header line over the limit", small, "SEND\nk:123456\n\n\x00", "header line", 8},
		{"header line over the limit with CRLF", small, "SEND\nk:12345\r\n\n\x00", "header line", 8},
		{"header line without end", small, "SEND\nk:" + strings.Repeat("v", 50), "header line", 8},
		{"body at the limit", small, "SEND\n\nabcd\x00", "", 0},
		{"body over the limit", small, "SEND\n\nabcde\x00", "body", 4},
		{"body over the limit without end", small, "SEND\n\n" + strings.Repeat("b", 50), "body", 4},
		{"content-length at the limit", stomp.Limits{MaxBody: 4}, "SEND\ncontent-length:4\n\nab\x00d\x00", "", 0},
		{"content-length over the limit", stomp.Limits{MaxBody: 4}, "SEND\ncontent-length:5\n\nabcde\x00", "body", 4},
		{"content-length far over the limit", stomp.Limits{MaxBody: 4}, "SEND\ncontent-length:999999999999\n\n", "body", 4},
		{"frame over the limit in the headers", frame, "SEND\nk:" + strings.Repeat("v", 40) + "\n\n\x00", "frame", 40},
		// 5 + 8 + 8 + 1 + 17 + 1 = 40 octets.
		{"frame at the limit", frame, "SEND\nabc:123\nabc:123\n\n" + strings.Repeat("b", 17) + "\x00", "", 0},
		{"frame over the limit in the body", frame, "SEND\nabc:123\nabc:123\n\n" + strings.Repeat("b", 18) + "\x00", "frame", 40},
		// 5 + 18 + 1 + 15 + 1 = 40 octets.
		{"frame at the limit with content-length", frame, "SEND\ncontent-length:15\n\n" + strings.Repeat("b", 15) + "\x00", "", 0},
		{"frame over the limit with content-length", frame, "SEND\ncontent-length:16\n\n" + strings.Repeat("b", 16) + "\x00", "frame", 40},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, split := range []bool{false, true} {
				var src io.Reader = strings.NewReader(tc.in)
				if split {
					src = bufio.NewReaderSize(iotest.OneByteReader(src), 16)
				}
				f, err := stomp.NewReader(src, tc.lim).Read()
				if tc.what == "" {
					if err != nil {
						t.Errorf("Read(%q) = %v, %v; want a frame", tc.in, f, err)
					}
					continue
				}
				var le *stomp.LimitError
				if !errors.As(err, &le) || le.What != tc.what || le.Limit != tc.limit || !errors.Is(err, stomp.ErrTooLarge) {
					t.Errorf("Read(%q) = %v, %v; want LimitError{%q, %d}", tc.in, f, err, tc.what, tc.limit)
				}
			}
		})
	}
}

func TestLimitsDefaults(t *testing.T) {
	// A frame just over the default body limit of 64 KiB.
	in := "SEND\n\n" + strings.Repeat("x", 64<<10+1) + "\x00"
	_, err := stomp.NewReader(strings.NewReader(in), stomp.Limits{}).Read()
	var le *stomp.LimitError
	if !errors.As(err, &le) || le.What != "body" || le.Limit != 64<<10 {
		t.Errorf("Read(64 KiB + 1 body) = %v, want LimitError{body, 65536}", err)
	}
	in = "SEND\n\n" + strings.Repeat("x", 64<<10) + "\x00"
	if _, err := stomp.NewReader(strings.NewReader(in), stomp.Limits{}).Read(); err != nil {
		t.Errorf("Read(64 KiB body) = %v, want a frame", err)
	}
}

func TestReadErrorIsFinal(t *testing.T) {
	r := stomp.NewReader(strings.NewReader("BOGUS\n\n\x00SEND\n\n\x00"), stomp.Limits{})
	_, err1 := r.Read()
	_, err2 := r.Read()
	if !errors.Is(err1, stomp.ErrUnknownCommand) || err2 != err1 {
		t.Errorf("Read twice after a bad frame = %v, %v; want the same ErrUnknownCommand twice", err1, err2)
	}
	if !errors.Is(err1, stomp.ErrMalformed) {
		t.Errorf("Read(unknown command) = %v, want it to wrap ErrMalformed too", err1)
	}
	r.Reset(strings.NewReader("SEND\n\n\x00"))
	if f, err := r.Read(); err != nil || f.Command != stomp.Send {
		t.Errorf("Read after Reset = %v, %v; want SEND", f, err)
	}
}

func TestReadFrameValidUntilNextRead(t *testing.T) {
	r := stomp.NewReader(strings.NewReader("SEND\nk:first\n\nA\x00SEND\nk:second\n\nB\x00"), stomp.Limits{})
	f, _ := r.Read()
	kept := f.Clone()
	if _, err := r.Read(); err != nil {
		t.Fatal(err)
	}
	if want := newFrame(stomp.Send, "A", "k", "first"); !equalFrames(kept, want) {
		t.Errorf("Clone of the first frame after the second Read = %v, want %v", kept, want)
	}
}

func TestReadVersion(t *testing.T) {
	r := stomp.NewReader(strings.NewReader(""), stomp.Limits{})
	if got := r.Version(); got != stomp.V12 {
		t.Errorf("NewReader().Version() = %v, want 1.2", got)
	}
	r.SetVersion(stomp.V10)
	r.Reset(strings.NewReader("SEND\nk:a\\tb\n\n\x00"))
	if got := r.Version(); got != stomp.V10 {
		t.Errorf("Version() after Reset = %v, want 1.0 (kept)", got)
	}
	if f, err := r.Read(); err != nil || string(f.Get("k")) != `a\tb` {
		t.Errorf("Read(unescaped 1.0 frame) after Reset = %v, %v; want k:a\\tb", f, err)
	}
	defer func() {
		if recover() == nil {
			t.Errorf("SetVersion(0) did not panic")
		}
	}()
	r.SetVersion(0)
}

// TestReadNegotiatedSession reads a CONNECT at the default version, then
// switches to the negotiated one, as the gateway does.
func TestReadNegotiatedSession(t *testing.T) {
	in := "CONNECT\naccept-version:1.0,1.1\nhost:h\n\n\x00" +
		"SEND\ndestination:/a\\cb\nk:x\\ry\n\n\x00"
	r := stomp.NewReader(strings.NewReader(in), stomp.Limits{})
	f, err := r.Read()
	if err != nil {
		t.Fatal(err)
	}
	v, ok := stomp.Negotiate(string(f.Get("accept-version")))
	pv, _ := stomp.ParseVersion(v)
	if !ok || pv != stomp.V11 {
		t.Fatalf("Negotiate(%q) = %q, %v; want 1.1", f.Get("accept-version"), v, ok)
	}
	r.SetVersion(pv)
	if _, err := r.Read(); !errors.Is(err, stomp.ErrBadEscape) {
		t.Errorf(`Read(\r escape in 1.1) = %v, want ErrBadEscape`, err)
	}
}

func TestReadLongLinesThroughSmallBuffer(t *testing.T) {
	long := strings.Repeat("v", 1000)
	in := "SEND\nk:" + long + "\nk2:" + long + "\\n\n\n" + long + "\x00"
	r := stomp.NewReader(bufio.NewReaderSize(strings.NewReader(in), 16), stomp.Limits{})
	f, err := r.Read()
	want := newFrame(stomp.Send, long, "k", long, "k2", long+"\n")
	if err != nil || !equalFrames(f, want) {
		t.Errorf("Read(%.40q...) = %v, %v; want %v", in, f, err, want)
	}
}

func TestReadAllocs(t *testing.T) {
	for _, tc := range []struct {
		name string
		f    *stomp.Frame
	}{
		{"MESSAGE", typicalMessage()},
		{"SEND", typicalSend()},
		{"SEND without content-length", newFrame(stomp.Send, strings.Repeat("b", 100), "destination", "/app/rooms.1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			enc := mustEncode(t, tc.f, stomp.V12)
			if tc.f.Get("content-length") == nil { // drop the one AppendFrame added
				enc = []byte(strings.Replace(string(enc), "content-length:100\n", "", 1))
			}
			enc = append(enc, '\n') // and a heart-beat
			r := stomp.NewReader(&loopReader{data: enc}, stomp.Limits{})
			for range 10 {
				if _, err := r.Read(); err != nil {
					t.Fatal(err)
				}
			}
			var sink int
			allocs := testing.AllocsPerRun(1000, func() {
				f, err := r.Read()
				if err != nil {
					t.Fatal(err)
				}
				sink += len(f.Get("destination")) + len(f.Get("content-type"))
			})
			if allocs != 0 {
				t.Errorf("Read(%v) allocates %v times per frame, want 0", tc.f, allocs)
			}
			_ = sink
		})
	}
}

// TestReadOneMessageAtATime feeds the Reader one WebSocket message at a time,
// as a gateway may, resetting it for each without losing the version.
func TestReadOneMessageAtATime(t *testing.T) {
	msgs := []struct {
		in   string
		want *stomp.Frame
	}{
		{"CONNECT\naccept-version:1.1,1.2\nhost:h\n\n\x00", newFrame(stomp.Connect, "", "accept-version", "1.1,1.2", "host", "h")},
		{"\n", heartbeat},
		{"SUBSCRIBE\nid:0\ndestination:/topic/rooms.1\n\n\x00", newFrame(stomp.Subscribe, "", "id", "0", "destination", "/topic/rooms.1")},
		{"SEND\ndestination:/app/rooms.1\ncontent-length:2\n\nhi\x00", newFrame(stomp.Send, "hi", "destination", "/app/rooms.1", "content-length", "2")},
	}
	var src bytes.Reader
	r := stomp.NewReader(&src, stomp.Limits{})
	for i, m := range msgs {
		src.Reset([]byte(m.in))
		r.Reset(&src)
		f, err := r.Read()
		if err != nil || !equalFrames(f, m.want) {
			t.Errorf("Read(%q) = %v, %v; want %v", m.in, f, err, m.want)
		}
		if _, err := r.Read(); err != io.EOF {
			t.Errorf("Read after the message %q = %v, want io.EOF", m.in, err)
		}
		if i == 0 {
			r.SetVersion(stomp.V11)
		}
		if got := r.Version(); got != stomp.V11 {
			t.Errorf("Version() after message %d = %v, want 1.1", i, got)
		}
	}
}

// TestReadConsumesOneFrame: Read takes exactly one frame (a heart-beat's
// line, a frame up to its NUL, with or without content-length) from the
// caller's bufio.Reader and nothing after it, so that the caller may read
// from it between frames (NewReader's doc).
func TestReadConsumesOneFrame(t *testing.T) {
	frames := []string{
		"\n",
		"MESSAGE\nseq:1\ncontent-length:3\n\na\x00b\x00",
		"RECEIPT\nreceipt-id:7\n\n\x00",
		"\r\n",
		"MESSAGE\r\nseq:2\r\n\r\nno length\x00",
	}
	stream := strings.Join(frames, "")
	br := bufio.NewReader(strings.NewReader(stream))
	r := stomp.NewReader(br, stomp.Limits{})
	rest := stream
	for _, f := range frames {
		if _, err := r.Read(); err != nil {
			t.Fatalf("read %q: %v", f, err)
		}
		rest = rest[len(f):]
		if got, _ := br.Peek(br.Buffered()); string(got) != rest {
			t.Fatalf("after %q the buffer holds %q, want %q", f, got, rest)
		}
	}
}
