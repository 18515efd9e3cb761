package stomp_test

import (
	"bytes"
	"errors"
	"testing"

	"parley/stomp"
)

// TestNULInHeaders checks that a NUL never passes through a header: the
// reader refuses a header line holding one (a client could otherwise have
// it echoed raw into frames that other clients read, where it ends the
// frame), and the writer refuses to write one, in every version, escaped
// or not. A NUL in a body is fine: content-length carries it.
func TestNULInHeaders(t *testing.T) {
	reads := []struct {
		name    string
		version stomp.Version
		in      string
	}{
		{"in a value", stomp.V12, "SEND\ndestination:/a\nclient-id:a\x00b\n\nx\x00"},
		{"ending a value", stomp.V12, "SEND\nclient-id:a\x00\n\nx\x00"},
		{"in a name", stomp.V12, "SEND\ncli\x00ent-id:a\n\nx\x00"},
		{"in 1.1", stomp.V11, "SEND\nclient-id:\x00\n\n\x00"},
		{"in 1.0, which does not escape", stomp.V10, "SEND\nclient-id:\x00\n\n\x00"},
		{"in CONNECT, which does not escape", stomp.V12, "CONNECT\nlogin:\x00\n\n\x00"},
	}
	for _, tc := range reads {
		r := stomp.NewReader(bytes.NewReader([]byte(tc.in)), stomp.Limits{})
		r.SetVersion(tc.version)
		if f, err := r.Read(); !errors.Is(err, stomp.ErrMalformed) {
			t.Errorf("%s: Read(%q) = %v, %v; want ErrMalformed", tc.name, tc.in, f, err)
		}
	}

	writes := []struct {
		name    string
		f       *stomp.Frame
		version stomp.Version
	}{
		{"a value, 1.2", newFrame(stomp.Message, "x", "client-id", "a\x00b"), stomp.V12},
		{"a value, 1.1", newFrame(stomp.Message, "x", "client-id", "\x00"), stomp.V11},
		{"a value, 1.0", newFrame(stomp.Message, "x", "client-id", "\x00"), stomp.V10},
		{"a value, CONNECTED", newFrame(stomp.Connected, "", "server", "p\x00"), stomp.V12},
		{"a name", newFrame(stomp.Receipt, "", "receipt\x00-id", "1"), stomp.V12},
	}
	for _, tc := range writes {
		if b, err := stomp.AppendFrame(nil, tc.f, tc.version); !errors.Is(err, stomp.ErrInvalid) {
			t.Errorf("%s: AppendFrame(%v, %v) = %q, %v; want ErrInvalid", tc.name, tc.f, tc.version, b, err)
		}
		if p, err := stomp.Prepare(tc.f, tc.version, "subscription"); !errors.Is(err, stomp.ErrInvalid) {
			t.Errorf("%s: Prepare(%v, %v) = %v, %v; want ErrInvalid", tc.name, tc.f, tc.version, p, err)
		}
	}
	for _, v := range []stomp.Version{stomp.V10, stomp.V11, stomp.V12} {
		p, err := stomp.Prepare(newFrame(stomp.Message, "a\x00b"), v, "subscription")
		if err != nil {
			t.Fatalf("Prepare(a body with a NUL, %v) = %v", v, err)
		}
		if b, err := p.Append(nil, "s\x00"); !errors.Is(err, stomp.ErrInvalid) {
			t.Errorf("Append(subscription with a NUL, %v) = %q, %v; want ErrInvalid", v, b, err)
		}
	}
}
