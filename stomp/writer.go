package stomp

import "strconv"

// AppendFrame appends the encoding of f in version v to dst and returns the
// extended slice. Headers are written in order, escaped as v and the command
// require. If f has a body and no content-length header, AppendFrame adds
// one, as the specification recommends, so that the body may contain NUL
// octets; if f has one, it must equal the length of the body. A Heartbeat
// frame, which has no headers and no body, is written as a single LF.
//
// If f cannot be encoded, AppendFrame returns dst unchanged and an error
// wrapping ErrInvalid. It allocates only to grow dst.
func AppendFrame(dst []byte, f *Frame, v Version) ([]byte, error) {
	return appendFrame(dst, f, v, nil)
}

// AppendHeartbeat appends a heart-beat, a single LF, to dst.
func AppendHeartbeat(dst []byte) []byte { return append(dst, '\n') }

// appendFrame is AppendFrame leaving out the headers named in skip.
func appendFrame(dst []byte, f *Frame, v Version, skip []string) ([]byte, error) {
	if !v.valid() {
		return dst, invalid("version %v", v)
	}
	if f.Command == Heartbeat {
		if len(f.hdrs) > 0 || len(f.Body) > 0 {
			return dst, invalid("heartbeat with headers or a body")
		}
		return AppendHeartbeat(dst), nil
	}
	if f.Command == 0 || f.Command >= numCommands {
		return dst, invalid("command %v", f.Command)
	}
	start := len(dst)
	dst = append(dst, commandNames[f.Command]...)
	dst = append(dst, '\n')
	esc := escaped(f.Command, v)
headers:
	for i := range f.hdrs {
		key, value := f.Header(i)
		for _, s := range skip {
			if string(key) == s {
				continue headers
			}
		}
		var err error
		if dst, err = appendHeader(dst, key, value, esc, v); err != nil {
			return dst[:start], err
		}
	}
	if cl, ok := f.Lookup("content-length"); ok {
		if n, ok := ParseLength(cl); !ok || n != len(f.Body) {
			return dst[:start], invalid("content-length %q for a body of %d octets", cl, len(f.Body))
		}
	} else if len(f.Body) > 0 {
		dst = append(dst, "content-length:"...)
		dst = strconv.AppendInt(dst, int64(len(f.Body)), 10)
		dst = append(dst, '\n')
	}
	dst = append(dst, '\n')
	dst = append(dst, f.Body...)
	return append(dst, 0), nil
}

// appendHeader appends the header line key:value, escaped if esc.
func appendHeader[K, V string | []byte](dst []byte, key K, value V, esc bool, v Version) ([]byte, error) {
	if len(key) == 0 {
		return dst, invalid("empty header name")
	}
	if hasNUL(key) || hasNUL(value) {
		return dst, errNULHeader(key)
	}
	if esc {
		dst = appendEscaped(dst, key, v)
		dst = append(dst, ':')
		dst = appendEscaped(dst, value, v)
	} else {
		if err := checkRaw(key, value, v); err != nil {
			return dst, err
		}
		dst = append(dst, key...)
		dst = append(dst, ':')
		dst = append(dst, value...)
	}
	return append(dst, '\n'), nil
}

// A Prepared is a frame encoded once for many recipients that differ only in
// the values of a few headers, such as the subscription header of a MESSAGE
// sent to every subscriber of a destination. The varying headers come first,
// right after the command; everything else is encoded once.
//
// A Prepared is immutable and safe for concurrent use.
type Prepared struct {
	v    Version
	esc  bool
	head []byte   // the command line
	keys [][]byte // the encoded "name:" of each varying header
	tail []byte   // the other headers, the blank line, the body and the NUL
}

// Prepare encodes f in version v with the headers named keys left to be given
// to Append for each recipient. Headers of f with those names are left out.
// The keys may not include content-length. Errors wrap ErrInvalid.
func Prepare(f *Frame, v Version, keys ...string) (*Prepared, error) {
	if f.Command == Heartbeat {
		return nil, invalid("cannot prepare a heartbeat")
	}
	enc, err := appendFrame(nil, f, v, keys)
	if err != nil {
		return nil, err
	}
	p := &Prepared{v: v, esc: escaped(f.Command, v)}
	n := len(commandNames[f.Command]) + 1
	p.head, p.tail = enc[:n:n], enc[n:]
	for _, k := range keys {
		if k == "content-length" {
			return nil, invalid("content-length cannot vary per recipient")
		}
		line, err := appendHeader(nil, k, "", p.esc, v)
		if err != nil {
			return nil, err
		}
		p.keys = append(p.keys, line[:len(line)-1]) // without the LF
	}
	return p, nil
}

// Append appends the frame to dst with values, in the order of the keys given
// to Prepare, as the varying headers, and returns the extended slice. If a
// value cannot be encoded, or the number of values is wrong, Append returns
// dst unchanged and an error wrapping ErrInvalid. It allocates only to grow
// dst.
func (p *Prepared) Append(dst []byte, values ...string) ([]byte, error) {
	if len(values) != len(p.keys) {
		return dst, invalid("%d header values for %d prepared headers", len(values), len(p.keys))
	}
	start := len(dst)
	dst = append(dst, p.head...)
	for i, k := range p.keys {
		if hasNUL(values[i]) {
			return dst[:start], errNULHeader(k[:len(k)-1])
		}
		dst = append(dst, k...)
		if p.esc {
			dst = appendEscaped(dst, values[i], p.v)
		} else {
			key := k[:len(k)-1]
			if err := checkRaw(key, values[i], p.v); err != nil {
				return dst[:start], err
			}
			dst = append(dst, values[i]...)
		}
		dst = append(dst, '\n')
	}
	return append(dst, p.tail...), nil
}

// hasNUL reports whether s holds a NUL octet. No version can write one in a
// header: many readers take it for the end of the frame, so a NUL written
// into a header would let its sender end the frame early and forge another.
func hasNUL[T string | []byte](s T) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return true
		}
	}
	return false
}

func errNULHeader[K string | []byte](key K) error {
	return invalid("header %q: a NUL cannot be written in a header", key)
}
