package stomp

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
)

// readerBufSize is the size of the bufio.Reader NewReader creates.
const readerBufSize = 4096

// retainMax bounds the buffers a Reader keeps between frames: a larger one,
// grown for a large frame, is dropped at the next Read so that an idle
// session does not hold on to it.
const retainMax = 64 << 10

// A Reader decodes STOMP frames from a stream. It reads through a
// bufio.Reader and accepts input split at any byte boundary.
//
// Lines may end in LF or CR LF. In 1.0 and 1.1, where only LF ends a line, a
// carriage return before the LF of a header line is kept as part of the value;
// on the command line and the blank line ending the headers it is always
// accepted, since it cannot be anything else there.
//
// A Reader is not safe for concurrent use.
type Reader struct {
	br      *bufio.Reader // what r reads from: own, or the caller's
	own     *bufio.Reader // created by r, kept for reuse by Reset
	lim     Limits
	version Version

	frame Frame  // returned by Read
	body  []byte // holds frame.Body
	line  []byte // accumulates a line longer than br's buffer
	size  int    // octets of the current frame read so far
	err   error  // first error; every later Read returns it
}

// NewReader returns a Reader decoding frames from rd at version 1.2, with the
// limits lim (zero fields take their defaults). If rd is a *bufio.Reader the
// Reader reads through it; otherwise the Reader wraps rd in a bufio.Reader
// of its own. Read consumes exactly one frame (a heart-beat's line, or up to
// and including its NUL) and keeps no stream state between frames (only its
// first error, which every later Read returns), so the owner of a
// *bufio.Reader may itself read whole frames from it between two Reads (the
// load generator does); within a frame nothing else may read from it.
func NewReader(rd io.Reader, lim Limits) *Reader {
	r := &Reader{lim: lim.withDefaults(), version: V12}
	r.Reset(rd)
	return r
}

// Reset makes r read from rd, as NewReader does, discarding any buffered
// input and clearing its error. It keeps r's limits and version, so a
// session that feeds r one WebSocket message at a time can Reset it for each;
// a Reader reused for a new session needs SetVersion(V12).
func (r *Reader) Reset(rd io.Reader) {
	if br, ok := rd.(*bufio.Reader); ok {
		r.br = br
	} else {
		if r.own == nil {
			r.own = bufio.NewReaderSize(rd, readerBufSize)
		} else {
			r.own.Reset(rd)
		}
		r.br = r.own
	}
	r.frame.Reset()
	r.size = 0
	r.err = nil
}

// SetVersion sets the protocol version of the frames that follow, once the
// session has negotiated it. It panics if v is not a valid Version.
func (r *Reader) SetVersion(v Version) {
	if !v.valid() {
		panic("stomp: SetVersion with invalid version " + v.String())
	}
	r.version = v
}

// Version returns the protocol version r decodes.
func (r *Reader) Version() Version { return r.version }

// Read reads the next frame. An end-of-line between frames (a heart-beat, or
// one of the end-of-lines that may follow a frame's NUL) is returned as a
// Frame with Command Heartbeat and nothing else, so that the session can
// refresh its read deadline.
//
// The Frame and everything it references are owned by r and valid only until
// the next call to Read or Reset; use Clone to keep one.
//
// Read returns io.EOF when the stream ends between frames and
// io.ErrUnexpectedEOF when it ends inside one. Errors for bad input wrap
// ErrMalformed (with ErrUnknownCommand and ErrBadEscape as special cases) or
// are a *LimitError; other errors come from the underlying reader. Every
// error is final: later calls return it again.
func (r *Reader) Read() (*Frame, error) {
	if r.err != nil {
		return nil, r.err
	}
	if err := r.readFrame(); err != nil {
		r.err = err
		return nil, err
	}
	return &r.frame, nil
}

func (r *Reader) readFrame() error {
	f := &r.frame
	f.Reset()
	if cap(f.buf) > retainMax {
		f.buf = nil
	}
	if cap(r.body) > retainMax {
		r.body = nil
	}
	if cap(r.line) > retainMax {
		r.line = nil
	}
	r.size = 0

	line, err := r.readLine(r.lim.MaxCommand, limitCommand)
	if err != nil {
		return err // io.EOF here is the clean end of the stream
	}
	line = trimCR(line)
	if len(line) == 0 {
		f.Command = Heartbeat
		return nil
	}
	cmd, ok := parseCommand(line)
	if !ok {
		return errUnknownCommand(line)
	}
	f.Command = cmd

	if err := r.readHeaders(f); err != nil {
		return err
	}
	return r.readBody(f)
}

// readHeaders reads the header lines of f up to and including the blank line.
func (r *Reader) readHeaders(f *Frame) error {
	esc := escaped(f.Command, r.version)
	for {
		line, err := r.readLine(r.lim.MaxHeaderLine, limitHeaderLine)
		if err != nil {
			return unexpectedEOF(err)
		}
		if n := len(line); n > 0 && line[n-1] == '\r' && (r.version >= V12 || n == 1) {
			line = line[:n-1]
		}
		if len(line) == 0 {
			return nil
		}
		if bytes.IndexByte(line, 0) >= 0 {
			// The grammar allows it, but no frame could carry it on (see
			// hasNUL), and a NUL that reached a client in a header would
			// end the frame there.
			return malformed("header line %q contains a NUL", truncate(line))
		}
		if len(f.hdrs) == r.lim.MaxHeaders {
			return &LimitError{What: limitHeaders, Limit: r.lim.MaxHeaders}
		}
		i := bytes.IndexByte(line, ':')
		switch {
		case i < 0:
			return malformed("header line %q has no colon", truncate(line))
		case i == 0:
			return malformed("header line %q has an empty name", truncate(line))
		}
		if err := r.addHeader(f, line[:i], line[i+1:], esc); err != nil {
			return err
		}
	}
}

// addHeader appends to f the header with the raw name key and value value,
// decoding them if esc.
func (r *Reader) addHeader(f *Frame, key, value []byte, esc bool) error {
	if !esc {
		addHeader(f, key, value)
		return nil
	}
	k := len(f.buf)
	var err error
	if f.buf, err = appendUnescaped(f.buf, key, r.version); err != nil {
		return err
	}
	v := len(f.buf)
	if f.buf, err = appendUnescaped(f.buf, value, r.version); err != nil {
		return err
	}
	f.hdrs = append(f.hdrs, header{k, v, len(f.buf)})
	return nil
}

// readBody reads the body of f and its NUL terminator: content-length octets
// if the frame has that header, else everything up to the first NUL.
func (r *Reader) readBody(f *Frame) error {
	// The body may be no longer than limit, named what: whichever of
	// MaxBody and the rest of MaxFrame (less the NUL) is reached first.
	limit, what := r.lim.MaxBody, limitBody
	if rest := r.lim.MaxFrame - r.size - 1; rest < limit {
		limit, what = rest, limitFrame
	}
	if limit < 0 {
		return r.limitError(what)
	}

	if cl, ok := f.Lookup("content-length"); ok {
		n, ok := ParseLength(cl)
		if !ok {
			return malformed("content-length %q is not a length", truncate(cl))
		}
		if n > limit {
			return r.limitError(what)
		}
		r.body = grow(r.body, n)
		if _, err := io.ReadFull(r.br, r.body); err != nil {
			return unexpectedEOF(err)
		}
		c, err := r.br.ReadByte()
		if err != nil {
			return unexpectedEOF(err)
		}
		if c != 0 {
			return malformed("no NUL after the %d octets of content-length", n)
		}
		r.size += n + 1
		f.Body = r.body
		return nil
	}

	r.body = r.body[:0]
	for {
		chunk, err := r.br.ReadSlice(0)
		r.body = append(r.body, chunk...)
		n := len(r.body)
		if err == nil {
			n-- // the NUL
		}
		if n > limit {
			return r.limitError(what)
		}
		if err == nil {
			r.size += len(r.body)
			f.Body = r.body[:n]
			return nil
		}
		if err != bufio.ErrBufferFull {
			return unexpectedEOF(err)
		}
	}
}

// readLine reads the next line and returns it without its LF; the result is
// valid until the next read from r.br. The line, LF included, may be no
// longer than limit octets (the limit named what) nor than the rest of
// MaxFrame. At the end of the stream readLine returns io.EOF if it read
// nothing and io.ErrUnexpectedEOF otherwise.
func (r *Reader) readLine(limit int, what string) ([]byte, error) {
	if rest := r.lim.MaxFrame - r.size; rest < limit {
		limit, what = rest, limitFrame
	}
	chunk, err := r.br.ReadSlice('\n')
	line := chunk
	if err == bufio.ErrBufferFull {
		r.line = append(r.line[:0], chunk...)
		for err == bufio.ErrBufferFull && len(r.line) <= limit {
			chunk, err = r.br.ReadSlice('\n')
			r.line = append(r.line, chunk...)
		}
		line = r.line
	}
	if len(line) > limit {
		return nil, r.limitError(what)
	}
	if err != nil {
		if err == io.EOF && len(line) > 0 {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	r.size += len(line)
	return line[:len(line)-1], nil
}

func (r *Reader) limitError(what string) error {
	limit := r.lim.MaxFrame
	switch what {
	case limitCommand:
		limit = r.lim.MaxCommand
	case limitHeaderLine:
		limit = r.lim.MaxHeaderLine
	case limitBody:
		limit = r.lim.MaxBody
	}
	return &LimitError{What: what, Limit: limit}
}

// unexpectedEOF turns io.EOF, which inside a frame is unexpected, into
// io.ErrUnexpectedEOF.
func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}

func trimCR(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\r' {
		return b[:n-1]
	}
	return b
}

// ParseLength parses a content-length value as the codec does: one to 18
// decimal digits, nothing else.
func ParseLength(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// grow returns b resized to n octets, reallocating only if its capacity is
// short.
func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n)
	}
	return b[:n]
}

// truncate shortens b for an error message.
func truncate(b []byte) []byte {
	const max = 64
	if len(b) > max {
		return b[:max]
	}
	return b
}

// errUnknownCommand returns an ErrUnknownCommand naming cmd.
func errUnknownCommand(cmd []byte) error {
	return fmt.Errorf("%w %q", ErrUnknownCommand, truncate(cmd))
}
