package stomp_test

import (
	"testing"

	"parley/stomp"
)

// BenchmarkRead reads typical frames, ten headers and a 100-octet body, from
// an endless stream and looks up two headers of each.
func BenchmarkRead(b *testing.B) {
	for _, bc := range []struct {
		name string
		f    *stomp.Frame
	}{
		{"MESSAGE", typicalMessage()},
		{"SEND", typicalSend()},
	} {
		b.Run(bc.name, func(b *testing.B) {
			enc := mustEncode(b, bc.f, stomp.V12)
			r := stomp.NewReader(&loopReader{data: enc}, stomp.Limits{})
			b.SetBytes(int64(len(enc)))
			b.ReportAllocs()
			for b.Loop() {
				f, err := r.Read()
				if err != nil {
					b.Fatal(err)
				}
				if len(f.Get("destination")) == 0 || len(f.Get("content-type")) == 0 {
					b.Fatal("missing header")
				}
			}
		})
	}
}

// BenchmarkWrite encodes a typical MESSAGE: once per recipient with
// AppendFrame, and with a Prepared frame where only the subscription header
// varies.
func BenchmarkWrite(b *testing.B) {
	msg := typicalMessage()
	buf := make([]byte, 0, 1024)
	b.Run("AppendFrame", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var err error
			if buf, err = stomp.AppendFrame(buf[:0], msg, stomp.V12); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
	})
	b.Run("Prepared.Append", func(b *testing.B) {
		p, err := stomp.Prepare(msg, stomp.V12, "subscription")
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if buf, err = p.Append(buf[:0], "sub-0"); err != nil {
				b.Fatal(err)
			}
		}
		b.SetBytes(int64(len(buf)))
	})
}
