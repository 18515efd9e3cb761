package stomp

import (
	"bytes"
	"fmt"
)

// escaped reports whether the header names and values of frames with command
// cmd are escaped in version v. STOMP 1.0 has no escaping, and "the CONNECT
// and CONNECTED frames do not escape the carriage return, line feed or colon
// octets in order to remain backward compatible with STOMP 1.0". A STOMP
// frame is escaped as any other frame: the specification names only CONNECT
// and CONNECTED.
func escaped(cmd Command, v Version) bool {
	return v >= V11 && cmd != Connect && cmd != Connected
}

// appendUnescaped appends the decoding of the escaped header name or value s
// to dst. Version 1.1 defines \n, \c and \\; version 1.2 adds \r. Any other
// escape, or a backslash ending s, is an ErrBadEscape.
func appendUnescaped(dst, s []byte, v Version) ([]byte, error) {
	for {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			return append(dst, s...), nil
		}
		dst = append(dst, s[:i]...)
		if i+1 == len(s) {
			return dst, errBadEscape(s[i:])
		}
		switch s[i+1] {
		case 'n':
			dst = append(dst, '\n')
		case 'c':
			dst = append(dst, ':')
		case '\\':
			dst = append(dst, '\\')
		case 'r':
			if v < V12 {
				return dst, errBadEscape(s[i : i+2])
			}
			dst = append(dst, '\r')
		default:
			return dst, errBadEscape(s[i : i+2])
		}
		s = s[i+2:]
	}
}

// errBadEscape returns an ErrBadEscape naming the sequence seq.
func errBadEscape(seq []byte) error {
	if len(seq) == 1 {
		return fmt.Errorf("%w: backslash ends the header", ErrBadEscape)
	}
	return fmt.Errorf("%w %q", ErrBadEscape, seq)
}

// appendEscaped appends the encoding of the header name or value s to dst for
// version v (1.1 or 1.2): backslash, line feed and colon become \\, \n and
// \c, and in 1.2 carriage return becomes \r. Version 1.1 has no escape for
// carriage return, which it allows in a header as is.
func appendEscaped[T string | []byte](dst []byte, s T, v Version) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		e := escapes[s[i]]
		if e == 0 || e == 'r' && v < V12 {
			continue
		}
		dst = append(dst, s[start:i]...)
		dst = append(dst, '\\', e)
		start = i + 1
	}
	return append(dst, s[start:]...)
}

// escapes maps each octet to the letter of its 1.2 escape sequence, or 0.
var escapes = [256]byte{'\\': '\\', '\n': 'n', ':': 'c', '\r': 'r'}

// checkRaw returns an error if the header key:value cannot be written
// unescaped in version v: a line feed would end the line, a colon in the name
// would end the name, and in 1.2, where a line may end in CR LF, a carriage
// return ending the value would be taken for part of the end-of-line.
func checkRaw[K, V string | []byte](key K, value V, v Version) error {
	for i := 0; i < len(key); i++ {
		if key[i] == '\n' || key[i] == ':' {
			return invalid("header name %q needs escaping, which this frame does not allow", key)
		}
	}
	for i := 0; i < len(value); i++ {
		if value[i] == '\n' {
			return invalid("header %q: value needs escaping, which this frame does not allow", key)
		}
	}
	if v >= V12 && len(value) > 0 && value[len(value)-1] == '\r' {
		return invalid("header %q: value ends in a carriage return, which this frame cannot escape", key)
	}
	return nil
}
