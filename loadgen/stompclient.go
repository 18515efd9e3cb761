package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"parley/stomp"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// stompConn is a minimal STOMP 1.2 client over WebSocket, enough to drive
// Parley's gateway and RabbitMQ's Web-STOMP plugin alike: CONNECT,
// SUBSCRIBE, SEND with receipts, and a reader of MESSAGE, RECEIPT and
// ERROR frames. The incoming WebSocket messages are read as one byte
// stream, so a server may put one STOMP frame per WebSocket message or
// coalesce several.
//
// Writes are serialised by wmu; reading is for one goroutine at a time.
type stompConn struct {
	nc net.Conn
	br *bufio.Reader // the STOMP byte stream, read by rd and, between frames, readMessage
	rd *stomp.Reader // the project's own codec, over br

	wmu  sync.Mutex // guards the following fields and writes to nc
	wbuf []byte

	// Fields of the frame last read by readFrame, valid until the next.
	cmd       string
	receiptID []byte
	errMsg    string
	body      []byte
	event     bool          // a room event MESSAGE (it has an event header)
	seq       int64         // a chat MESSAGE's seq header; 0 when none
	version   stomp.Version // from CONNECTED
}

// connectParams are the CONNECT frame's credentials.
type connectParams struct {
	host     string
	login    string
	passcode string
	bearer   string // Authorization: Bearer
}

// Read buffer sizes: a busy connection (messaging) reads in large chunks;
// an idle one (connections) keeps its footprint small, so that one load
// generator can hold many.
const (
	busyBuffer = 64 << 10
	idleBuffer = 4 << 10
)

// dialSTOMP opens a WebSocket to wsURL with the STOMP subprotocols, sends
// CONNECT and waits for CONNECTED. bufSize sizes the read buffers.
func dialSTOMP(ctx context.Context, wsURL string, p connectParams, timeout time.Duration, bufSize int) (*stompConn, error) {
	d := ws.Dialer{
		Protocols: []string{"v12.stomp", "v11.stomp", "v10.stomp"},
		Timeout:   timeout,
	}
	nc, br, _, err := d.Dial(ctx, wsURL)
	if err != nil {
		return nil, fmt.Errorf("websocket %s: %w", wsURL, err)
	}
	var src io.Reader = nc
	if br != nil {
		src = io.MultiReader(br, nc)
	}
	c := &stompConn{nc: nc}
	wr := &wsutil.Reader{
		Source: bufio.NewReaderSize(src, bufSize),
		State:  ws.StateClientSide,
	}
	c.br = bufio.NewReaderSize(&wsStream{r: wr, c: c}, bufSize)
	c.rd = stomp.NewReader(c.br, readLimits)

	f := c.frame("CONNECT", "accept-version", "1.2,1.1,1.0", "host", p.host, "heart-beat", "0,0")
	if p.login != "" {
		f = appendHeader(f, "login", p.login)
	}
	if p.passcode != "" {
		f = appendHeader(f, "passcode", p.passcode)
	}
	if p.bearer != "" {
		f = appendHeader(f, "Authorization", "Bearer "+p.bearer)
	}
	if err := c.writeFrame(f, nil); err != nil {
		nc.Close()
		return nil, err
	}
	nc.SetReadDeadline(time.Now().Add(timeout))
	defer nc.SetReadDeadline(time.Time{})
	if err := c.readFrame(); err != nil {
		nc.Close()
		return nil, fmt.Errorf("read CONNECTED: %w", err)
	}
	switch c.cmd {
	case "CONNECTED":
		c.rd.SetVersion(c.version)
		return c, nil
	case "ERROR":
		nc.Close()
		return nil, fmt.Errorf("CONNECT refused: %s", c.errMsg)
	}
	nc.Close()
	return nil, fmt.Errorf("CONNECT answered with %s", c.cmd)
}

// subscribe subscribes to dest and waits for the receipt. It reads frames
// itself, so it must be called before a reader goroutine starts.
func (c *stompConn) subscribe(id, dest string, timeout time.Duration) error {
	receipt := "sub-" + id
	f := c.frame("SUBSCRIBE", "id", id, "destination", dest, "ack", "auto", "receipt", receipt)
	if err := c.writeFrame(f, nil); err != nil {
		return err
	}
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	defer c.nc.SetReadDeadline(time.Time{})
	for {
		if err := c.readFrame(); err != nil {
			return fmt.Errorf("subscribe %s: %w", dest, err)
		}
		switch c.cmd {
		case "RECEIPT":
			if string(c.receiptID) == receipt {
				return nil
			}
		case "ERROR":
			return fmt.Errorf("subscribe %s: %s", dest, c.errMsg)
		}
	}
}

// close sends DISCONNECT (best effort) and closes the socket.
func (c *stompConn) close() {
	c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	c.writeFrame(c.frame("DISCONNECT"), nil)
	c.nc.Close()
}

// frame starts a frame in a fresh buffer: command and header pairs.
// Values must not need escaping (the bench's never do).
func (c *stompConn) frame(cmd string, kv ...string) []byte {
	b := make([]byte, 0, 256)
	b = append(b, cmd...)
	b = append(b, '\n')
	for i := 0; i+1 < len(kv); i += 2 {
		b = appendHeader(b, kv[i], kv[i+1])
	}
	return b
}

func appendHeader(b []byte, k, v string) []byte {
	b = append(b, k...)
	b = append(b, ':')
	b = append(b, v...)
	return append(b, '\n')
}

// writeFrame ends the frame head (blank line), appends body and the NUL,
// and writes it as one masked WebSocket text message in one write.
func (c *stompConn) writeFrame(head, body []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	n := len(head) + 1 + len(body) + 1
	hdr := ws.Header{Fin: true, OpCode: ws.OpText, Masked: true, Mask: ws.NewMask(), Length: int64(n)}
	buf := bytes.NewBuffer(c.wbuf[:0])
	if err := ws.WriteHeader(buf, hdr); err != nil {
		return err
	}
	start := buf.Len()
	buf.Write(head)
	buf.WriteByte('\n')
	buf.Write(body)
	buf.WriteByte(0)
	out := buf.Bytes()
	ws.Cipher(out[start:], hdr.Mask, 0)
	c.wbuf = out
	_, err := c.nc.Write(out)
	return err
}

// writeControl answers a ping.
func (c *stompConn) writeControl(op ws.OpCode, payload []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	p := append([]byte(nil), payload...)
	f := ws.MaskFrameInPlace(ws.NewFrame(op, true, p))
	return ws.WriteFrame(c.nc, f)
}

// errClosed is a close frame from the server.
var errClosed = errors.New("websocket closed by server")

// readLimits are the client's frame limits: a load run decides its own
// payloads, so they only guard against a runaway stream.
var readLimits = stomp.Limits{MaxBody: 16 << 20, MaxFrame: 16<<20 + 64<<10}

// readFrame reads the next STOMP frame into c.cmd, c.receiptID, c.errMsg
// and c.body (valid until the next call), skipping heart-beats. A
// delivery is scanned by readMessage; every other frame is decoded by the
// codec, its header values unescaped as the STOMP version requires.
func (c *stompConn) readFrame() error {
	if ok, err := c.readMessage(); ok || err != nil {
		return err
	}
	f, err := c.rd.Read()
	for err == nil && f.Command == stomp.Heartbeat {
		f, err = c.rd.Read()
	}
	if err != nil {
		return err
	}
	c.cmd = f.Command.String()
	c.receiptID = append(c.receiptID[:0], f.Get("receipt-id")...)
	c.errMsg = string(f.Get("message"))
	c.body = f.Body
	c.event = f.Get("event") != nil
	c.seq = 0
	if v := f.Get("seq"); v != nil && !c.event {
		c.seq, _ = strconv.ParseInt(string(v), 10, 64)
	}
	if f.Command == stomp.Error && c.errMsg == "" {
		c.errMsg = string(c.body)
	}
	if f.Command == stomp.Connected {
		c.version = stomp.V10 // no version header: 1.0
		if v, ok := stomp.ParseVersion(string(f.Get("version"))); ok {
			c.version = v
		}
	}
	return nil
}

// readMessage reads the next frame if it is a MESSAGE with a
// content-length, buffered whole (it waits for the stream's next octets,
// not for more), whose lines end in a bare LF: it takes
// the two headers the bench uses (seq and event; the first of a repeated
// header, as the codec does) and the body, and skips the other headers
// undecoded, as the Centrifugo client reads a push (parseCFLine). Anything
// else (another command, a heart-beat, a frame not yet buffered whole, a
// CR, no content-length or one that is not a number, no NUL where the
// body ends) it leaves unread and reports false, for the codec to read or
// reject. The load generator shares the machine with the server it
// measures, and the codec's full decoding of the eleven headers of every
// delivery was most of its cost per delivery (BenchmarkReadSTOMPMessage);
// the checks it skips here (header escapes, counts and lengths) are the
// gateway's conformance, tested in the stomp and gateway packages. An
// error is the stream's, at the start of a frame, as the codec would
// return it.
func (c *stompConn) readMessage() (bool, error) {
	const cmd = "MESSAGE\n"
	if c.br == nil {
		return false, nil
	}
	if _, err := c.br.Peek(1); err != nil {
		return false, err
	}
	b, _ := c.br.Peek(c.br.Buffered())
	if !bytes.HasPrefix(b, []byte(cmd)) {
		return false, nil
	}
	var seq, length int64 = 0, -1
	seen, event := false, false
	i := len(cmd)
	for {
		j := bytes.IndexByte(b[i:], '\n')
		if j < 0 {
			return false, nil
		}
		line := b[i : i+j]
		i += j + 1
		if len(line) == 0 {
			break
		}
		if line[len(line)-1] == '\r' {
			return false, nil
		}
		switch line[0] {
		case 's':
			if v, ok := bytes.CutPrefix(line, []byte("seq:")); ok && !seen {
				n, _ := stomp.ParseLength(v) // not an unsigned number: 0 (the gateway writes only those)
				seq, seen = int64(n), true
			}
		case 'e':
			if bytes.HasPrefix(line, []byte("event:")) {
				event = true
			}
		case 'c':
			if v, ok := bytes.CutPrefix(line, []byte("content-length:")); ok && length < 0 {
				n, ok := stomp.ParseLength(v)
				if !ok {
					return false, nil
				}
				length = int64(n)
			}
		}
	}
	if length < 0 || int64(len(b)-i) <= length || b[i+int(length)] != 0 {
		return false, nil
	}
	c.cmd, c.receiptID, c.errMsg = "MESSAGE", c.receiptID[:0], ""
	c.body, c.event, c.seq = b[i:i+int(length)], event, 0
	if !event {
		c.seq = seq
	}
	c.br.Discard(i + int(length) + 1)
	return true, nil
}

// wsStream reads the payloads of the server's WebSocket data messages as
// one stream, answering pings and ending at a close frame.
type wsStream struct {
	r *wsutil.Reader
	c *stompConn
	// inFrame is whether r has a data message open.
	inFrame bool
}

func (s *wsStream) Read(p []byte) (int, error) {
	for {
		if s.inFrame {
			n, err := s.r.Read(p)
			if err == io.EOF {
				s.inFrame = false
				err = nil
			}
			if n > 0 || err != nil {
				return n, err
			}
			continue
		}
		hdr, err := s.r.NextFrame()
		if err != nil {
			return 0, err
		}
		if hdr.OpCode.IsControl() {
			payload := make([]byte, hdr.Length)
			if _, err := io.ReadFull(s.r, payload); err != nil && err != io.EOF {
				return 0, err
			}
			switch hdr.OpCode {
			case ws.OpPing:
				if err := s.c.writeControl(ws.OpPong, payload); err != nil {
					return 0, err
				}
			case ws.OpClose:
				return 0, errClosed
			}
			continue
		}
		s.inFrame = true
	}
}

// wsURLOf returns the STOMP endpoint of a Parley node: http://h:p → ws://h:p/ws.
func wsURLOf(base string) string {
	switch {
	case len(base) > 5 && base[:5] == "https":
		return "wss" + base[5:] + "/ws"
	case len(base) > 4 && base[:4] == "http":
		return "ws" + base[4:] + "/ws"
	}
	return base
}

// hostOf returns the host header of a URL for CONNECT.
func hostOf(raw string) string {
	req, err := http.NewRequest("GET", raw, nil)
	if err != nil {
		return "/"
	}
	return req.URL.Hostname()
}
