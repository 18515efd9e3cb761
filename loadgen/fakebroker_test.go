package loadgen

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/gobwas/ws"
	"github.com/gobwas/ws/wsutil"
)

// fakeBroker is a tiny STOMP-over-WebSocket topic broker in the manner of
// RabbitMQ's Web-STOMP plugin: CONNECT with login/passcode, SUBSCRIBE to a
// destination, SEND fans out to every subscription of it, receipts on
// request. It exists to test the client and the messaging engine without a
// real server. coalesce puts every MESSAGE of a fan-out and the RECEIPT in
// one WebSocket message, as a server that batches its writes may.
type fakeBroker struct {
	t        *testing.T
	coalesce bool
	ping     bool // send a ping before CONNECTED

	mu   sync.Mutex // guards subs
	subs map[string][]*fakeSub
}

type fakeSub struct {
	id   string
	conn *fakeConn
}

type fakeConn struct {
	mu sync.Mutex // guards writes to nc
	nc net.Conn
}

func (c *fakeConn) write(p []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	wsutil.WriteServerMessage(c.nc, ws.OpText, p)
}

func newFakeBroker(t *testing.T, coalesce bool) (*fakeBroker, string) {
	b := &fakeBroker{t: t, coalesce: coalesce, subs: map[string][]*fakeSub{}}
	srv := httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(srv.Close)
	return b, "ws" + strings.TrimPrefix(srv.URL, "http") + "/ws"
}

func (b *fakeBroker) serve(w http.ResponseWriter, r *http.Request) {
	up := ws.HTTPUpgrader{Protocol: func(p string) bool { return p == "v12.stomp" }}
	nc, _, _, err := up.Upgrade(r, w)
	if err != nil {
		return
	}
	defer nc.Close()
	c := &fakeConn{nc: nc}
	rw := rwOf{bufio.NewReader(nc), nc}
	for {
		data, op, err := wsutil.ReadClientData(rw)
		if err != nil {
			return
		}
		if op != ws.OpText {
			continue
		}
		for _, raw := range bytes.Split(data, []byte{0}) {
			if len(bytes.TrimSpace(raw)) == 0 {
				continue
			}
			if !b.handle(c, raw) {
				return
			}
		}
	}
}

// handle answers one frame; false closes the connection.
func (b *fakeBroker) handle(c *fakeConn, raw []byte) bool {
	head, body, _ := bytes.Cut(raw, []byte("\n\n"))
	lines := strings.Split(string(head), "\n")
	hdr := map[string]string{}
	for _, l := range lines[1:] {
		if k, v, ok := strings.Cut(l, ":"); ok {
			if _, dup := hdr[k]; !dup {
				hdr[k] = v
			}
		}
	}
	receipt := func() []byte {
		if id, ok := hdr["receipt"]; ok {
			return []byte("RECEIPT\nreceipt-id:" + id + "\n\n\x00")
		}
		return nil
	}
	switch lines[0] {
	case "CONNECT", "STOMP":
		if hdr["login"] != "guest" || hdr["passcode"] != "guest" {
			c.write([]byte("ERROR\nmessage:bad credentials\\c try again\n\n\x00"))
			return false
		}
		if b.ping {
			c.mu.Lock()
			ws.WriteFrame(c.nc, ws.NewPingFrame([]byte("hi")))
			c.mu.Unlock()
		}
		c.write([]byte("CONNECTED\nversion:1.2\nheart-beat:0,0\n\n\x00"))
	case "SUBSCRIBE":
		b.mu.Lock()
		b.subs[hdr["destination"]] = append(b.subs[hdr["destination"]], &fakeSub{id: hdr["id"], conn: c})
		b.mu.Unlock()
		if r := receipt(); r != nil {
			c.write(r)
		}
	case "SEND":
		b.mu.Lock()
		subs := append([]*fakeSub(nil), b.subs[hdr["destination"]]...)
		b.mu.Unlock()
		var own []byte
		for _, s := range subs {
			// No content-length on half of them: the client must read
			// up to the NUL as well.
			msg := "MESSAGE\ndestination:" + hdr["destination"] + "\nsubscription:" + s.id + "\nmessage-id:1\n"
			if len(body)%2 == 0 {
				msg += "content-length:" + itoa(len(body)) + "\n"
			}
			frame := append([]byte(msg+"\n"), body...)
			frame = append(frame, 0)
			if b.coalesce && s.conn == c {
				own = append(own, frame...)
				continue
			}
			s.conn.write(frame)
		}
		own = append(own, receipt()...)
		if len(own) > 0 {
			c.write(own)
		}
	case "DISCONNECT":
		if r := receipt(); r != nil {
			c.write(r)
		}
		return false
	}
	return true
}

// rwOf reads through a buffer and writes (control frame answers) to the
// connection.
type rwOf struct {
	r *bufio.Reader
	w net.Conn
}

func (x rwOf) Read(p []byte) (int, error)  { return x.r.Read(p) }
func (x rwOf) Write(p []byte) (int, error) { return x.w.Write(p) }

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	for {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
		if n == 0 {
			return string(b[i:])
		}
	}
}
