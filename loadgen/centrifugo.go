package loadgen

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// TargetCentrifugo is Centrifugo (v6), driven over its JSON protocol on
// WebSocket (ws://host:8000/connection/websocket): connect with an HS256
// connection token, subscribe, publish. It must run with the memory
// engine and client-side subscribe and publish allowed in channels
// without namespace (scripts/bench-vs-centrifugo.sh writes such a config).
const TargetCentrifugo = "centrifugo"

// cfConn is a minimal Centrifugo client over WebSocket, speaking the JSON
// protocol (one command per line, several replies and pushes per
// WebSocket message): enough for the messaging scenarios. Writes are
// serialised by wmu; reading is for one goroutine at a time.
type cfConn struct {
	nc  net.Conn
	wr  *wsutil.Reader
	msg []byte // the current WebSocket message; lines are read from it
	pos int    // next octet of msg
	id  int64  // last command id; guarded by wmu

	wmu  sync.Mutex // guards id, wbuf and writes to nc
	wbuf []byte
}

// cfToken makes an HS256 connection token (a JWT) for user sub.
func cfToken(secret, sub string, ttl time.Duration) string {
	enc := base64.RawURLEncoding
	head := enc.EncodeToString([]byte(`{"alg":"HS256","typ":"JWT"}`))
	claims := enc.EncodeToString([]byte(`{"sub":"` + sub + `","exp":` + strconv.FormatInt(time.Now().Add(ttl).Unix(), 10) + `}`))
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(head + "." + claims))
	return head + "." + claims + "." + enc.EncodeToString(mac.Sum(nil))
}

// dialCentrifugo connects to a Centrifugo WebSocket endpoint as user sub
// and waits for the connect reply.
func dialCentrifugo(ctx context.Context, wsURL, secret, sub string, timeout time.Duration, bufSize int) (*cfConn, error) {
	d := ws.Dialer{Timeout: timeout}
	nc, br, _, err := d.Dial(ctx, wsURL)
	if err != nil {
		return nil, fmt.Errorf("websocket %s: %w", wsURL, err)
	}
	var src io.Reader = nc
	if br != nil {
		src = io.MultiReader(br, nc)
	}
	c := &cfConn{nc: nc, wr: &wsutil.Reader{Source: bufio.NewReaderSize(src, bufSize), State: ws.StateClientSide}}
	token := cfToken(secret, sub, 24*time.Hour)
	if _, err := c.command(`"connect":{"token":"` + token + `","name":"parley-bench"}`); err != nil {
		nc.Close()
		return nil, err
	}
	if err := c.awaitReply(1, timeout); err != nil {
		nc.Close()
		return nil, fmt.Errorf("connect: %w", err)
	}
	return c, nil
}

// command writes one command with the next id and returns the id.
func (c *cfConn) command(body string) (int64, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.id++
	b := append(c.wbuf[:0], `{"id":`...)
	b = strconv.AppendInt(b, c.id, 10)
	b = append(b, ',')
	b = append(b, body...)
	b = append(b, '}')
	c.wbuf = b
	return c.id, c.writeLocked(ws.OpText, b)
}

// publish writes a publish of data (a JSON string: the bench's bodies need
// no escaping) to channel and returns its command id.
func (c *cfConn) publish(channel string, data []byte) (int64, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.id++
	b := append(c.wbuf[:0], `{"id":`...)
	b = strconv.AppendInt(b, c.id, 10)
	b = append(b, `,"publish":{"channel":"`...)
	b = append(b, channel...)
	b = append(b, `","data":"`...)
	b = append(b, data...)
	b = append(b, `"}}`...)
	c.wbuf = b
	return c.id, c.writeLocked(ws.OpText, b)
}

// writeLocked writes one masked WebSocket message in one write.
func (c *cfConn) writeLocked(op ws.OpCode, payload []byte) error {
	var hdr bytes.Buffer
	h := ws.Header{Fin: true, OpCode: op, Masked: true, Mask: ws.NewMask(), Length: int64(len(payload))}
	if err := ws.WriteHeader(&hdr, h); err != nil {
		return err
	}
	out := make([]byte, 0, hdr.Len()+len(payload))
	out = append(out, hdr.Bytes()...)
	start := len(out)
	out = append(out, payload...)
	ws.Cipher(out[start:], h.Mask, 0)
	_, err := c.nc.Write(out)
	return err
}

// subscribe subscribes to channel and waits for the reply. It reads
// itself, so it must be called before a reader goroutine starts.
func (c *cfConn) subscribe(channel string, timeout time.Duration) error {
	id, err := c.command(`"subscribe":{"channel":"` + channel + `"}`)
	if err != nil {
		return err
	}
	if err := c.awaitReply(id, timeout); err != nil {
		return fmt.Errorf("subscribe %s: %w", channel, err)
	}
	return nil
}

// awaitReply reads until the reply to command id, failing on its error.
func (c *cfConn) awaitReply(id int64, timeout time.Duration) error {
	c.nc.SetReadDeadline(time.Now().Add(timeout))
	defer c.nc.SetReadDeadline(time.Time{})
	for {
		line, err := c.readLine()
		if err != nil {
			return err
		}
		r := parseCFLine(line)
		if r.kind == cfReply && r.id == id {
			if r.err != "" {
				return fmt.Errorf("refused: %s", r.err)
			}
			return nil
		}
	}
}

// close closes the socket (Centrifugo needs no goodbye).
func (c *cfConn) close() {
	c.wmu.Lock()
	c.nc.SetWriteDeadline(time.Now().Add(time.Second))
	c.writeLocked(ws.OpClose, ws.NewCloseFrameBody(ws.StatusNormalClosure, ""))
	c.wmu.Unlock()
	c.nc.Close()
}

// readLine returns the next line (one reply or push) of the server's
// WebSocket messages, valid until the next call. It answers the
// server's pings ({} → {}) and WebSocket pings itself.
func (c *cfConn) readLine() ([]byte, error) {
	for {
		if c.pos < len(c.msg) {
			rest := c.msg[c.pos:]
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				i = len(rest)
			}
			line := rest[:i]
			c.pos += i + 1
			if len(line) == 0 {
				continue
			}
			if string(line) == "{}" {
				c.wmu.Lock()
				err := c.writeLocked(ws.OpText, []byte("{}"))
				c.wmu.Unlock()
				if err != nil {
					return nil, err
				}
				continue
			}
			return line, nil
		}
		hdr, err := c.wr.NextFrame()
		if err != nil {
			return nil, err
		}
		payload := c.msg[:0]
		if int64(cap(payload)) < hdr.Length {
			payload = make([]byte, 0, hdr.Length)
		}
		payload = payload[:hdr.Length]
		if _, err := io.ReadFull(c.wr, payload); err != nil {
			return nil, err
		}
		switch {
		case hdr.OpCode == ws.OpPing:
			c.wmu.Lock()
			err := c.writeLocked(ws.OpPong, payload)
			c.wmu.Unlock()
			if err != nil {
				return nil, err
			}
			payload = payload[:0]
		case hdr.OpCode == ws.OpClose:
			return nil, fmt.Errorf("%w: %s", errClosed, closeReason(payload))
		case hdr.OpCode.IsControl():
			payload = payload[:0]
		}
		c.msg, c.pos = payload, 0
	}
}

// closeReason renders a close frame's code and reason.
func closeReason(p []byte) string {
	if len(p) < 2 {
		return "no reason"
	}
	return strconv.Itoa(int(p[0])<<8|int(p[1])) + " " + string(p[2:])
}

// cfLine is a parsed line of the server.
type cfLine struct {
	kind int
	id   int64  // cfReply
	err  string // cfReply: the error's message, "" for success
	data []byte // cfPush: the publication's data (the JSON string's contents)
}

const (
	cfOther = iota
	cfReply
	cfPush
)

// parseCFLine reads the few fields the bench needs from one line,
// without a JSON decoder: replies start {"id":N, pushes hold
// "pub":{"data":"..." (the bench publishes strings that need no escaping).
func parseCFLine(line []byte) cfLine {
	if rest, ok := bytes.CutPrefix(line, []byte(`{"id":`)); ok {
		r := cfLine{kind: cfReply}
		for _, ch := range rest {
			if ch < '0' || ch > '9' {
				break
			}
			r.id = r.id*10 + int64(ch-'0')
		}
		if i := bytes.Index(rest, []byte(`"error":`)); i >= 0 {
			r.err = string(rest[i+len(`"error":`):])
			if j := strings.Index(r.err, `"message":"`); j >= 0 {
				msg := r.err[j+len(`"message":"`):]
				if k := strings.IndexByte(msg, '"'); k >= 0 {
					msg = msg[:k]
				}
				r.err = msg
			}
			if r.err == "" {
				r.err = "error"
			}
		}
		return r
	}
	if bytes.HasPrefix(line, []byte(`{"push":`)) {
		i := bytes.Index(line, []byte(`"pub":`))
		if i < 0 {
			return cfLine{}
		}
		rest := line[i:]
		j := bytes.Index(rest, []byte(`"data":"`))
		if j < 0 {
			return cfLine{}
		}
		data := rest[j+len(`"data":"`):]
		if k := bytes.IndexByte(data, '"'); k >= 0 {
			data = data[:k]
		}
		return cfLine{kind: cfPush, data: data}
	}
	return cfLine{}
}

// cfChannel names the Centrifugo channel of a bench topic: channels have
// no /topic/ prefix.
func cfChannel(dest string) string { return strings.TrimPrefix(dest, "/topic/") }

// connectCentrifugo connects client c of a messaging run to Centrifugo
// and subscribes it to its room's channel.
func (m *msgRun) connectCentrifugo(ctx context.Context, c *msgClient, dest string) error {
	o := m.r.o
	conn, err := dialCentrifugo(ctx, o.URLs[c.idx%len(o.URLs)], o.Secret, "u"+strconv.Itoa(c.idx), o.Timeout, m.bufSize())
	if err != nil {
		return fmt.Errorf("user %d: %w", c.idx, err)
	}
	c.cf = conn
	if err := conn.subscribe(cfChannel(dest), o.Timeout); err != nil {
		return fmt.Errorf("user %d: %w", c.idx, err)
	}
	c.sendDest = cfChannel(dest)
	c.pending = map[int64]int64{}
	c.acked = make(chan struct{}, 1)
	c.last = make([]int32, m.senderCount())
	m.r.done.Add(1)
	return nil
}

// readCentrifugo handles the lines of one Centrifugo client until its
// connection closes: a publish reply is the receipt, a push a delivery.
func (m *msgRun) readCentrifugo(c *msgClient) {
	for {
		line, err := c.cf.readLine()
		if err != nil {
			if !m.closing.Load() {
				m.r.rec.Error(c.idx, "connection lost: "+errKind(err))
			}
			return
		}
		r := parseCFLine(line)
		switch r.kind {
		case cfPush:
			m.deliver(c, r.data)
		case cfReply:
			if r.err != "" {
				m.r.rec.Error(c.idx, "centrifugo error: "+r.err)
			}
			m.receipted(c, r.id, r.err == "")
		}
	}
}

// receipted accounts the answer to command id of c: a publish's reply
// counts as its receipt.
func (m *msgRun) receipted(c *msgClient, id int64, ok bool) {
	c.mu.Lock()
	at, pending := c.pending[id]
	delete(c.pending, id)
	c.mu.Unlock()
	if !pending || !ok {
		return
	}
	m.ack.Record(c.idx, time.Duration(m.now()-at))
	m.accepted.Add(1)
	m.expected.Add(m.subs[c.room])
	select {
	case c.acked <- struct{}{}:
	default:
	}
}

// sendCentrifugo publishes message n of client c.
func (m *msgRun) sendCentrifugo(c *msgClient, n int, head, body []byte) ([]byte, []byte, error) {
	body = m.body(body, c.idx, n)
	// Once set up, only the client's sender goroutine issues commands, so
	// the id of the publish is known before it is written and pending
	// holds its send time before the reply can arrive.
	c.cf.wmu.Lock()
	next := c.cf.id + 1
	c.cf.wmu.Unlock()
	c.mu.Lock()
	c.pending[next] = m.now()
	c.mu.Unlock()
	m.sent.Add(1)
	id, err := c.cf.publish(c.sendDest, body)
	if err == nil && id != next {
		err = fmt.Errorf("command ids out of step (%d, want %d)", id, next)
	}
	return head, body, err
}
