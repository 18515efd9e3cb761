package stomp_test

import (
	"bytes"
	"errors"
	"strings"
	"sync"
	"testing"

	"parley/stomp"
)

func TestAppendFrame(t *testing.T) {
	tests := []struct {
		name    string
		f       *stomp.Frame
		version stomp.Version
		want    string
		err     error
	}{
		{
			name:    "a body gets a content-length header so that it may contain NULL octets",
			f:       newFrame(stomp.Send, "a\x00b", "destination", "/a"),
			version: stomp.V12,
			want:    "SEND\ndestination:/a\ncontent-length:3\n\na\x00b\x00",
		},
		{
			name:    "a frame without a body gets no content-length",
			f:       newFrame(stomp.Subscribe, "", "id", "0", "destination", "/a"),
			version: stomp.V12,
			want:    "SUBSCRIBE\nid:0\ndestination:/a\n\n\x00",
		},
		{
			name:    "a matching content-length header is kept as is",
			f:       newFrame(stomp.Message, "hi", "content-length", "2", "subscription", "s"),
			version: stomp.V12,
			want:    "MESSAGE\ncontent-length:2\nsubscription:s\n\nhi\x00",
		},
		{
			name:    "a content-length header that does not match the body is refused",
			f:       newFrame(stomp.Message, "hi", "content-length", "3"),
			version: stomp.V12,
			err:     stomp.ErrInvalid,
		},
		{
			name:    "when encoding frame headers, the reverse transformation MUST be applied (1.2)",
			f:       newFrame(stomp.Message, "", "a:b", "x:y\nz\\w\rv"),
			version: stomp.V12,
			want:    "MESSAGE\na\\cb:x\\cy\\nz\\\\w\\rv\n\n\x00",
		},
		{
			name:    "STOMP 1.1 has no carriage return escape and writes it as is",
			f:       newFrame(stomp.Message, "", "k", "x:y\nz\\w\rv"),
			version: stomp.V11,
			want:    "MESSAGE\nk:x\\cy\\nz\\\\w\rv\n\n\x00",
		},
		{
			name:    "STOMP 1.0 has no escaping",
			f:       newFrame(stomp.Message, "", "k", `a:b\c`),
			version: stomp.V10,
			want:    "MESSAGE\nk:a:b\\c\n\n\x00",
		},
		{
			name:    "STOMP 1.0 cannot write a line feed in a value",
			f:       newFrame(stomp.Message, "", "k", "a\nb"),
			version: stomp.V10,
			err:     stomp.ErrInvalid,
		},
		{
			name:    "the CONNECTED frame is not escaped",
			f:       newFrame(stomp.Connected, "", "version", "1.2", "server", `parley/1.0 a:b\c`),
			version: stomp.V12,
			want:    "CONNECTED\nversion:1.2\nserver:parley/1.0 a:b\\c\n\n\x00",
		},
		{
			name:    "the CONNECTED frame cannot carry a colon in a header name",
			f:       newFrame(stomp.Connected, "", "a:b", "1"),
			version: stomp.V12,
			err:     stomp.ErrInvalid,
		},
		{
			name:    "an unescaped value cannot end in a carriage return in 1.2",
			f:       newFrame(stomp.Connect, "", "host", "h\r"),
			version: stomp.V12,
			err:     stomp.ErrInvalid,
		},
		{
			name:    "a header name is at least one octet",
			f:       newFrame(stomp.Send, "", "", "v"),
			version: stomp.V12,
			err:     stomp.ErrInvalid,
		},
		{
			name:    "repeated headers are written in order",
			f:       newFrame(stomp.Message, "", "foo", "World", "foo", "Hello"),
			version: stomp.V12,
			want:    "MESSAGE\nfoo:World\nfoo:Hello\n\n\x00",
		},
		{
			name:    "a heart-beat is an EOL",
			f:       &stomp.Frame{Command: stomp.Heartbeat},
			version: stomp.V12,
			want:    "\n",
		},
		{
			name:    "the zero command is invalid",
			f:       &stomp.Frame{},
			version: stomp.V12,
			err:     stomp.ErrInvalid,
		},
		{
			name: "the zero version is invalid",
			f:    newFrame(stomp.Send, ""),
			err:  stomp.ErrInvalid,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			prefix := []byte("previous frame\x00")
			got, err := stomp.AppendFrame(bytes.Clone(prefix), tc.f, tc.version)
			if !bytes.HasPrefix(got, prefix) {
				t.Fatalf("AppendFrame(%v, %v) = %q, which lost the prefix %q", tc.f, tc.version, got, prefix)
			}
			got = got[len(prefix):]
			if tc.err != nil {
				if !errors.Is(err, tc.err) || len(got) != 0 {
					t.Errorf("AppendFrame(%v, %v) = %q, %v; want nothing more, %v", tc.f, tc.version, got, err, tc.err)
				}
				return
			}
			if err != nil || string(got) != tc.want {
				t.Errorf("AppendFrame(%v, %v) = %q, %v; want %q", tc.f, tc.version, got, err, tc.want)
			}
			// What is written reads back as the frame, with the content-length
			// AppendFrame may have added.
			r := stomp.NewReader(bytes.NewReader(got), stomp.Limits{})
			r.SetVersion(tc.version)
			back, err := r.Read()
			want := tc.f.Clone()
			if want.Command != stomp.Heartbeat && len(want.Body) > 0 && want.Get("content-length") == nil {
				want.AddInt("content-length", int64(len(want.Body)))
			}
			if err != nil || !equalFrames(back, want) {
				t.Errorf("Read(AppendFrame(%v)) = %v, %v; want %v", tc.f, back, err, want)
			}
		})
	}
}

func TestPrepared(t *testing.T) {
	msg := typicalMessage()
	for _, v := range []stomp.Version{stomp.V10, stomp.V11, stomp.V12} {
		p, err := stomp.Prepare(msg, v, "subscription", "ack")
		if err != nil {
			t.Fatalf("Prepare(%v, %v) failed: %v", msg, v, err)
		}
		for _, sub := range []string{"sub-0", "", "sub-1"} {
			got, err := p.Append([]byte("x"), sub, "ack-"+sub)
			// The same frame built by hand: the varying headers first, then
			// the others without the original subscription header.
			f := newFrame(stomp.Message, "", "subscription", sub, "ack", "ack-"+sub)
			for i := range msg.NumHeaders() {
				k, val := msg.Header(i)
				if string(k) != "subscription" {
					f.AddBytes(string(k), val)
				}
			}
			f.Body = msg.Body
			want := append([]byte("x"), mustEncode(t, f, v)...)
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("Prepare(%v).Append(%q) = %q, %v; want %q", v, sub, got, err, want)
			}
		}
	}
}

func TestPreparedEscapes(t *testing.T) {
	p, err := stomp.Prepare(newFrame(stomp.Message, "b"), stomp.V12, "subscription")
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Append(nil, "a:b\\c\r\nd")
	if want := "MESSAGE\nsubscription:a\\cb\\\\c\\r\\nd\ncontent-length:1\n\nb\x00"; err != nil || string(got) != want {
		t.Errorf("Append(%q) = %q, %v; want %q", "a:b\\c\r\nd", got, err, want)
	}

	p, err = stomp.Prepare(newFrame(stomp.Message, "b"), stomp.V10, "subscription")
	if err != nil {
		t.Fatal(err)
	}
	if got, err := p.Append([]byte("x"), "a\nb"); !errors.Is(err, stomp.ErrInvalid) || string(got) != "x" {
		t.Errorf("Append(line feed in 1.0) = %q, %v; want %q, ErrInvalid", got, err, "x")
	}
}

func TestPreparedErrors(t *testing.T) {
	msg := newFrame(stomp.Message, "b")
	tests := []struct {
		name string
		f    *stomp.Frame
		keys []string
	}{
		{"content-length cannot vary", msg, []string{"content-length"}},
		{"empty header name", msg, []string{""}},
		{"heart-beat", &stomp.Frame{Command: stomp.Heartbeat}, nil},
		{"invalid frame", newFrame(stomp.Message, "", "", "v"), []string{"subscription"}},
	}
	for _, tc := range tests {
		if p, err := stomp.Prepare(tc.f, stomp.V12, tc.keys...); !errors.Is(err, stomp.ErrInvalid) {
			t.Errorf("%s: Prepare(%v, %q) = %v, %v; want ErrInvalid", tc.name, tc.f, tc.keys, p, err)
		}
	}
	p, _ := stomp.Prepare(msg, stomp.V12, "subscription")
	if _, err := p.Append(nil, "a", "b"); !errors.Is(err, stomp.ErrInvalid) {
		t.Errorf("Append with 2 values for 1 key = %v, want ErrInvalid", err)
	}
}

func TestPreparedConcurrent(t *testing.T) {
	p, err := stomp.Prepare(typicalMessage(), stomp.V12, "subscription")
	if err != nil {
		t.Fatal(err)
	}
	want, _ := p.Append(nil, "sub-7")
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			var buf []byte
			for range 100 {
				buf, _ = p.Append(buf[:0], "sub-7")
				if !bytes.Equal(buf, want) {
					t.Errorf("concurrent Append = %q, want %q", buf, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestWriteAllocs(t *testing.T) {
	msg := typicalMessage()
	send := typicalSend()
	p, err := stomp.Prepare(msg, stomp.V12, "subscription")
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 0, 4096)
	var f stomp.Frame
	for _, tc := range []struct {
		name string
		fn   func()
	}{
		{"AppendFrame MESSAGE", func() { buf, _ = stomp.AppendFrame(buf[:0], msg, stomp.V12) }},
		{"AppendFrame SEND", func() { buf, _ = stomp.AppendFrame(buf[:0], send, stomp.V12) }},
		{"Prepared.Append", func() { buf, _ = p.Append(buf[:0], "sub-12") }},
		{"building a RECEIPT with Add after Reset", func() {
			f.Reset()
			f.Command = stomp.Receipt
			f.Add("receipt-id", "77")
			f.AddInt("seq", 1234567)
			f.AddBytes("message-id", msg.Get("message-id"))
			buf, _ = stomp.AppendFrame(buf[:0], &f, stomp.V12)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn() // grow the buffers
			if allocs := testing.AllocsPerRun(1000, tc.fn); allocs != 0 {
				t.Errorf("%s allocates %v times per frame, want 0", tc.name, allocs)
			}
		})
	}
}

func TestFrameHeaders(t *testing.T) {
	f := newFrame(stomp.Message, "", "a", "1", "b", "", "a", "2")
	if v, ok := f.Lookup("a"); !ok || string(v) != "1" {
		t.Errorf(`Lookup("a") = %q, %v; want "1", true (the first wins)`, v, ok)
	}
	if v, ok := f.Lookup("b"); !ok || v == nil || len(v) != 0 {
		t.Errorf(`Lookup("b") = %q, %v; want "", true`, v, ok)
	}
	if v, ok := f.Lookup("c"); ok || v != nil {
		t.Errorf(`Lookup("c") = %q, %v; want nil, false`, v, ok)
	}
	if k, v := f.Header(2); string(k) != "a" || string(v) != "2" {
		t.Errorf("Header(2) = %q, %q; want a, 2", k, v)
	}
	// Appending to a returned value must not overwrite the next header.
	_ = append(f.Get("a"), "XXXX"...)
	if v := f.Get("b"); len(v) != 0 {
		t.Errorf(`Get("b") after appending to Get("a") = %q, want ""`, v)
	}
	if got, want := f.String(), `MESSAGE{"a":"1" "b":"" "a":"2"} ""`; got != want {
		t.Errorf("String() = %s, want %s", got, want)
	}
	c := f.Clone()
	f.Reset()
	if c.NumHeaders() != 3 || string(c.Get("a")) != "1" || f.NumHeaders() != 0 {
		t.Errorf("Clone then Reset: clone %v, original %v", c, f)
	}
}

func TestCommand(t *testing.T) {
	for _, tc := range []struct {
		c         stomp.Command
		name      string
		allowBody bool
	}{
		{stomp.Send, "SEND", true},
		{stomp.Message, "MESSAGE", true},
		{stomp.Error, "ERROR", true},
		{stomp.Subscribe, "SUBSCRIBE", false},
		{stomp.Connected, "CONNECTED", false},
		{stomp.Heartbeat, "heartbeat", false},
		{0, "Command(0)", false},
	} {
		if got := tc.c.String(); got != tc.name {
			t.Errorf("Command(%d).String() = %q, want %q", tc.c, got, tc.name)
		}
		if got := tc.c.AllowsBody(); got != tc.allowBody {
			t.Errorf("%v.AllowsBody() = %v, want %v (only SEND, MESSAGE and ERROR frames MAY have a body)", tc.c, got, tc.allowBody)
		}
	}
	if !strings.Contains(stomp.Heartbeat.String(), "heartbeat") || stomp.Heartbeat.IsClient() || stomp.Heartbeat.IsServer() {
		t.Errorf("Heartbeat is neither a client nor a server command")
	}
}
