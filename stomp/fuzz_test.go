package stomp_test

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"parley/stomp"
)

// fuzzLimits are small enough for fuzz inputs to reach every limit.
var fuzzLimits = stomp.Limits{MaxCommand: 12, MaxHeaders: 4, MaxHeaderLine: 24, MaxBody: 32, MaxFrame: 96}

// bigLimits are large enough for anything a fuzz input encodes to.
var bigLimits = stomp.Limits{MaxHeaders: 1 << 20, MaxHeaderLine: 1 << 20, MaxBody: 1 << 20, MaxFrame: 1 << 22}

// FuzzReader checks that reading input split at arbitrary points (splits:
// the sizes of the reads, see splitReader), through the smallest
// bufio.Reader and through one of the size a session reads with, gives the
// same frames and the same error as reading it whole, and that every frame
// read encodes and reads back the same. CI runs it for a while:
//
//	go test -fuzz FuzzReader -fuzztime 20s ./stomp/
func FuzzReader(f *testing.F) {
	for _, tc := range specCases {
		f.Add([]byte(tc.in), []byte{0, 3, 5, 1}, uint8(tc.version), false)
		f.Add([]byte(tc.in), []byte{2}, uint8(tc.version), true)
	}
	f.Add(mustEncode(f, typicalMessage(), stomp.V12), []byte{6, 0, 2}, uint8(stomp.V12), false)
	f.Add(mustEncode(f, typicalSend(), stomp.V11), []byte{1}, uint8(stomp.V11), true)
	// A frame whose header line and body straddle reads of every size.
	long := "SEND\ndestination:/" + strings.Repeat("d", 300) + "\ncontent-length:200\n\n" + strings.Repeat("b", 200) + "\x00"
	f.Add([]byte(long), []byte{255, 0, 17, 130}, uint8(stomp.V12), false)
	f.Add([]byte(long+long), []byte{200, 255}, uint8(stomp.V12), true)

	f.Fuzz(func(t *testing.T, data, splits []byte, version uint8, small bool) {
		v := stomp.Version(version%3 + 1)
		lim := stomp.Limits{}
		if small {
			lim = fuzzLimits
		}
		whole := stomp.NewReader(bytes.NewReader(data), lim)
		whole.SetVersion(v)
		want, wantErr := readAll(whole)

		for _, size := range []int{16, 4096} {
			split := stomp.NewReader(bufio.NewReaderSize(&splitReader{data: data, sizes: splits}, size), lim)
			split.SetVersion(v)
			got, gotErr := readAll(split)
			if !equalFrameLists(got, want) || gotErr.Error() != wantErr.Error() {
				t.Fatalf("Read(%q) split by %v through %d octets = %v, %v; read whole = %v, %v", data, splits, size, got, gotErr, want, wantErr)
			}
		}
		if wantErr != io.EOF && wantErr != io.ErrUnexpectedEOF &&
			!errors.Is(wantErr, stomp.ErrMalformed) && !errors.Is(wantErr, stomp.ErrTooLarge) {
			t.Fatalf("Read(%q) = %v, which is neither EOF, ErrMalformed nor ErrTooLarge", data, wantErr)
		}

		for _, fr := range want {
			enc, err := stomp.AppendFrame(nil, fr, v)
			if err != nil {
				// Only a value that read as ending in a carriage return,
				// from "\r\r\n" in a CONNECT frame, cannot be written back.
				if !errors.Is(err, stomp.ErrInvalid) {
					t.Fatalf("AppendFrame(%v, %v) = %v, want ErrInvalid", fr, v, err)
				}
				continue
			}
			checkReadBack(t, fr, enc, v)
		}
	})
}

// FuzzRoundTrip encodes arbitrary frames and checks that what AppendFrame
// accepts reads back as the same frame, and that it refuses exactly the
// frames that cannot be encoded.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint8(stomp.Send), uint8(stomp.V12), []byte("destination\xff/a:b\\c\r\nd\xffreceipt\xff"), []byte("hello\x00world"))
	f.Add(uint8(stomp.Connect), uint8(stomp.V12), []byte("accept-version\xff1.2\xffhost\xffh:1"), []byte(nil))
	f.Add(uint8(stomp.Message), uint8(stomp.V10), []byte("k\xffa:b"), []byte("x"))
	f.Add(uint8(stomp.Message), uint8(stomp.V11), []byte("k\xffa\rb\r"), []byte("x"))
	f.Add(uint8(stomp.Send), uint8(stomp.V12), []byte("content-length\xff3"), []byte("abc"))
	f.Add(uint8(stomp.Heartbeat), uint8(stomp.V12), []byte(nil), []byte(nil))

	f.Fuzz(func(t *testing.T, cmd, version uint8, headers, body []byte) {
		fr := &stomp.Frame{Command: stomp.Command(cmd % 18)}
		fields := bytes.Split(headers, []byte{0xff})
		for i := 0; i+1 < len(fields); i += 2 {
			fr.AddBytes(string(fields[i]), fields[i+1])
		}
		if len(body) > 0 {
			fr.Body = body
		}
		v := stomp.Version(version % 4) // the zero Version is invalid

		enc, err := stomp.AppendFrame(nil, fr, v)
		if why := unencodable(fr, v); why != "" {
			if !errors.Is(err, stomp.ErrInvalid) {
				t.Fatalf("AppendFrame(%v, %v) = %q, %v; want ErrInvalid (%s)", fr, v, enc, err, why)
			}
			return
		}
		if err != nil {
			t.Fatalf("AppendFrame(%v, %v) = %v", fr, v, err)
		}
		checkReadBack(t, fr, enc, v)
	})
}

// checkReadBack checks that enc, the encoding of fr in version v, reads back
// as fr and nothing else.
func checkReadBack(t *testing.T, fr *stomp.Frame, enc []byte, v stomp.Version) {
	t.Helper()
	want := fr.Clone()
	if want.Command != stomp.Heartbeat && len(want.Body) > 0 && want.Get("content-length") == nil {
		want.AddInt("content-length", int64(len(want.Body)))
	}
	r := stomp.NewReader(bytes.NewReader(enc), bigLimits)
	r.SetVersion(v)
	got, err := readAll(r)
	if len(got) != 1 || !equalFrames(got[0], want) || err != io.EOF {
		t.Fatalf("Read(AppendFrame(%v, %v) = %q) = %v, %v; want %v", fr, v, enc, got, err, want)
	}
}

// unencodable says why fr cannot be encoded in version v, or returns "".
func unencodable(fr *stomp.Frame, v stomp.Version) string {
	if v < stomp.V10 || v > stomp.V12 {
		return "invalid version"
	}
	if fr.Command == stomp.Heartbeat {
		if fr.NumHeaders() > 0 || len(fr.Body) > 0 {
			return "heartbeat with headers or a body"
		}
		return ""
	}
	if fr.Command == 0 || fr.Command > stomp.Error {
		return "invalid command"
	}
	raw := v == stomp.V10 || fr.Command == stomp.Connect || fr.Command == stomp.Connected
	for i := range fr.NumHeaders() {
		k, val := fr.Header(i)
		switch {
		case len(k) == 0:
			return "empty header name"
		case bytes.IndexByte(k, 0) >= 0 || bytes.IndexByte(val, 0) >= 0:
			return "a NUL in a header"
		case raw && bytes.ContainsAny(k, "\n:"):
			return "unescaped header name with a line feed or colon"
		case raw && bytes.ContainsRune(val, '\n'):
			return "unescaped header value with a line feed"
		case raw && v == stomp.V12 && bytes.HasSuffix(val, []byte("\r")):
			return "unescaped header value ending in a carriage return"
		}
	}
	if cl, ok := fr.Lookup("content-length"); ok {
		n := 0
		for _, c := range cl {
			if c < '0' || c > '9' || len(cl) > 18 {
				return "content-length not a number"
			}
			n = n*10 + int(c-'0')
		}
		if len(cl) == 0 || n != len(fr.Body) {
			return "content-length does not match the body"
		}
	}
	return ""
}
