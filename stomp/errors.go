package stomp

import (
	"errors"
	"fmt"
)

// Errors of the codec. Each error the Reader returns for bad input wraps
// ErrMalformed or ErrTooLarge, so that a session can map it to an ERROR frame
// with errors.Is; the text after the prefix says what was wrong. The errors of
// the encoders wrap ErrInvalid.
var (
	// ErrMalformed is wrapped by every error for input that is not a valid
	// STOMP frame.
	ErrMalformed = errors.New("stomp: malformed frame")

	// ErrUnknownCommand is wrapped by the error for a frame whose command
	// is not a STOMP command. It wraps ErrMalformed.
	ErrUnknownCommand = fmt.Errorf("%w: unknown command", ErrMalformed)

	// ErrBadEscape is wrapped by the error for a header containing an
	// escape sequence the protocol version does not define, which the
	// specification makes a fatal protocol error. It wraps ErrMalformed.
	ErrBadEscape = fmt.Errorf("%w: undefined escape sequence", ErrMalformed)

	// ErrTooLarge is wrapped by every *LimitError.
	ErrTooLarge = errors.New("stomp: frame too large")

	// ErrInvalid is wrapped by the errors of the encoders for a frame that
	// cannot be encoded: an invalid command or version, an empty header
	// name, a header that cannot be written unescaped, or a content-length
	// header that does not match the body.
	ErrInvalid = errors.New("stomp: invalid frame")
)

// Default limits, used for the zero fields of Limits.
const (
	defaultMaxCommand    = 32
	defaultMaxHeaders    = 64
	defaultMaxHeaderLine = 8 << 10
	defaultMaxBody       = 64 << 10
	defaultMaxFrame      = 128 << 10
)

// Limits bounds what a Reader accepts from its peer. A zero or negative field
// takes its default. Lengths are in octets.
type Limits struct {
	// MaxCommand bounds the command line, its end-of-line included.
	// Default 32; every STOMP command fits in 13.
	MaxCommand int

	// MaxHeaders bounds the number of headers in a frame, repeated ones
	// included. Default 64.
	MaxHeaders int

	// MaxHeaderLine bounds one header line as received (escaped), its
	// end-of-line included. Default 8 KiB.
	MaxHeaderLine int

	// MaxBody bounds the body, its NUL terminator excluded.
	// Default 64 KiB.
	MaxBody int

	// MaxFrame bounds a whole frame as received, from the first octet of
	// the command to the NUL terminator included. Default 128 KiB.
	MaxFrame int
}

// withDefaults returns l with its zero and negative fields set to the
// defaults.
func (l Limits) withDefaults() Limits {
	fill := func(p *int, def int) {
		if *p <= 0 {
			*p = def
		}
	}
	fill(&l.MaxCommand, defaultMaxCommand)
	fill(&l.MaxHeaders, defaultMaxHeaders)
	fill(&l.MaxHeaderLine, defaultMaxHeaderLine)
	fill(&l.MaxBody, defaultMaxBody)
	fill(&l.MaxFrame, defaultMaxFrame)
	return l
}

// Names of the limits in LimitError.What.
const (
	limitCommand    = "command line"
	limitHeaders    = "header count"
	limitHeaderLine = "header line"
	limitBody       = "body"
	limitFrame      = "frame"
)

// A LimitError reports input exceeding one of the Limits. It wraps
// ErrTooLarge.
type LimitError struct {
	// What names the limit: "command line", "header count", "header line",
	// "body" or "frame".
	What string
	// Limit is the value of the limit that was exceeded.
	Limit int
}

// Error returns a message such as
// "stomp: frame too large: body exceeds 65536 octets".
func (e *LimitError) Error() string {
	if e.What == limitHeaders {
		return fmt.Sprintf("%v: more than %d headers", ErrTooLarge, e.Limit)
	}
	return fmt.Sprintf("%v: %s exceeds %d octets", ErrTooLarge, e.What, e.Limit)
}

// Unwrap returns ErrTooLarge.
func (e *LimitError) Unwrap() error { return ErrTooLarge }

// malformed returns an error wrapping ErrMalformed with the given detail.
func malformed(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrMalformed}, args...)...)
}

// invalid returns an error wrapping ErrInvalid with the given detail.
func invalid(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrInvalid}, args...)...)
}
