package gateway

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestOriginScheme checks that the Origin check compares the scheme as
// well as host and port: a page served over another scheme from the same
// host:port is another origin.
func TestOriginScheme(t *testing.T) {
	tests := []struct {
		name    string
		allowed []string
		tls     bool
		origin  string // with HOST for the server's host:port
		want    int
	}{
		{"same origin", nil, false, "http://HOST", http.StatusSwitchingProtocols},
		{"same origin, scheme in capitals", nil, false, "HTTP://HOST", http.StatusSwitchingProtocols},
		{"https for an http server", nil, false, "https://HOST", http.StatusForbidden},
		{"ftp on the same host and port", nil, false, "ftp://HOST", http.StatusForbidden},
		{"ws on the same host and port", nil, false, "ws://HOST", http.StatusForbidden},
		{"null", nil, false, "null", http.StatusForbidden},
		{"another port", nil, false, "http://HOST1", http.StatusForbidden},
		{"https for an https server", nil, true, "https://HOST", http.StatusSwitchingProtocols},
		{"http for an https server", nil, true, "http://HOST", http.StatusForbidden},
		{"listed", []string{"https://chat.example"}, false, "https://chat.example", http.StatusSwitchingProtocols},
		{"listed with a slash", []string{"https://chat.example/"}, false, "https://chat.example", http.StatusSwitchingProtocols},
		{"listed host, other scheme", []string{"https://chat.example"}, false, "http://chat.example", http.StatusForbidden},
		{"listed host, ftp", []string{"https://chat.example"}, false, "ftp://chat.example", http.StatusForbidden},
		{"not listed: the same host is not enough", []string{"https://chat.example"}, false, "http://HOST", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{AllowedOrigins: tt.allowed})
			url, client := e.http.URL, http.DefaultClient
			if tt.tls {
				ts := httptest.NewTLSServer(e.srv)
				defer ts.Close()
				url, client = ts.URL, ts.Client()
			}
			host := strings.TrimPrefix(strings.TrimPrefix(url, "http://"), "https://")
			origin := strings.ReplaceAll(tt.origin, "HOST", host)
			req, _ := http.NewRequest("GET", url+"/ws", nil)
			req.Header.Set("Connection", "Upgrade")
			req.Header.Set("Upgrade", "websocket")
			req.Header.Set("Sec-WebSocket-Version", "13")
			req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
			req.Header.Set("Sec-WebSocket-Protocol", "v12.stomp")
			req.Header.Set("Origin", origin)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("Origin %q at %s: status %d, want %d", origin, url, resp.StatusCode, tt.want)
			}
		})
	}
}

// rawWS is a hand-written WebSocket client, to send what a library would
// not.
type rawWS struct {
	t  *testing.T
	c  net.Conn
	br *bufio.Reader
}

func (e *env) dialRawWS(t *testing.T) *rawWS {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(e.http.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return e.dialRawWSConn(t, c)
}

// dialRawWSConn opens a WebSocket session on c.
func (e *env) dialRawWSConn(t *testing.T, c net.Conn) *rawWS {
	t.Helper()
	fmt.Fprintf(c, "GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"+
		"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"+
		"Sec-WebSocket-Protocol: v12.stomp\r\n\r\n", c.RemoteAddr())
	w := &rawWS{t: t, c: c, br: bufio.NewReader(c)}
	for {
		line, err := w.br.ReadString('\n')
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		if line == "\r\n" {
			return w
		}
	}
}

// wsFrame is a masked client frame (zero masking key).
func wsFrame(fin bool, op byte, payload string) []byte {
	b0 := op
	if fin {
		b0 |= 0x80
	}
	b := []byte{b0}
	switch n := len(payload); {
	case n < 126:
		b = append(b, 0x80|byte(n))
	default:
		b = append(b, 0x80|126, byte(n>>8), byte(n))
	}
	b = append(b, 0, 0, 0, 0)
	return append(b, payload...)
}

// next reads one server frame: its payload and opcode.
func (w *rawWS) next() (payload []byte, op byte, err error) {
	var hdr [2]byte
	if _, err := io.ReadFull(w.br, hdr[:]); err != nil {
		return nil, 0, err
	}
	n := int(hdr[1] & 0x7f)
	switch n {
	case 126:
		var ext [2]byte
		if _, err := io.ReadFull(w.br, ext[:]); err != nil {
			return nil, 0, err
		}
		n = int(binary.BigEndian.Uint16(ext[:]))
	case 127:
		var ext [8]byte
		if _, err := io.ReadFull(w.br, ext[:]); err != nil {
			return nil, 0, err
		}
		n = int(binary.BigEndian.Uint64(ext[:]))
	}
	payload = make([]byte, n)
	if _, err := io.ReadFull(w.br, payload); err != nil {
		return nil, 0, err
	}
	return payload, hdr[0] & 0x0f, nil
}

// readOne reads server frames up to the first text frame and returns it,
// or the Close status if a Close frame comes first.
func (w *rawWS) readOne() (text string, status int) {
	w.t.Helper()
	w.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		payload, op, err := w.next()
		switch {
		case err != nil:
			return "", -1
		case op == 0x1:
			return string(payload), 0
		case op == 0x8 && len(payload) >= 2:
			return "", int(binary.BigEndian.Uint16(payload))
		case op == 0x8:
			return "", 0
		}
	}
}

// readUntilClose reads server frames until a Close frame and returns the
// text payloads before it and the Close status (0 for none, -1 if the
// connection ended without a Close frame).
func (w *rawWS) readUntilClose() (texts []string, status int) {
	w.t.Helper()
	w.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		payload, op, err := w.next()
		if err != nil {
			return texts, -1
		}
		switch op {
		case 0x8:
			if len(payload) < 2 {
				return texts, 0
			}
			return texts, int(binary.BigEndian.Uint16(payload))
		case 0x1:
			texts = append(texts, string(payload))
		}
	}
}

// TestWebSocketFragments checks RFC 6455 §5.4 on fragmented messages: a
// continuation frame with no message started, or a new message before the
// last one's final frame, fails the connection with ERROR and Close 1002;
// a message in fragments with a ping between them is fine.
func TestWebSocketFragments(t *testing.T) {
	connect := frame("CONNECT", "", "accept-version:1.2", "passcode:token-alice", "heart-beat:0,0")
	half := len(connect) / 2
	tests := []struct {
		name   string
		frames [][]byte
		status int    // of the Close frame; 0: the session lives
		first  string // command of the first STOMP frame from the server
	}{
		{"a continuation first of all", [][]byte{wsFrame(true, 0x0, connect)}, wsProtocolError, "ERROR"},
		{"an empty continuation first of all", [][]byte{wsFrame(true, 0x0, "")}, wsProtocolError, "ERROR"},
		{"a continuation after a whole message", [][]byte{wsFrame(true, 0x1, connect), wsFrame(true, 0x0, "\n")}, wsProtocolError, "CONNECTED"},
		{"a new message inside a fragmented one", [][]byte{wsFrame(false, 0x1, connect[:half]), wsFrame(true, 0x1, connect[half:])}, wsProtocolError, "ERROR"},
		{"fragments with a ping between", [][]byte{wsFrame(false, 0x1, connect[:half]), wsFrame(true, 0x9, "p"), wsFrame(true, 0x0, connect[half:])}, 0, "CONNECTED"},
		{"fragments with the session idle between", [][]byte{wsFrame(true, 0x0, frame("SUBSCRIBE", "", "id:0", "destination:/user/queue/messages", "receipt:s"))}, 0, "RECEIPT"},
		{"three fragments", [][]byte{wsFrame(false, 0x1, connect[:3]), wsFrame(false, 0x0, connect[3:half]), wsFrame(true, 0x0, connect[half:])}, 0, "CONNECTED"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.chat.addUser("alice")
			w := e.dialRawWS(t)
			if tt.name == "fragments with the session idle between" {
				// CONNECTED proves the first fragment was read and
				// acted on: the session waits idle for the rest.
				w.c.Write(wsFrame(false, 0x1, connect))
				if texts, status := w.readOne(); !strings.HasPrefix(texts, "CONNECTED\n") {
					t.Fatalf("got %q (close %d), want CONNECTED", texts, status)
				}
			}
			for _, f := range tt.frames {
				w.c.Write(f)
			}
			if tt.status == 0 {
				w.c.Write(wsFrame(true, 0x1, frame("DISCONNECT", "", "receipt:bye")))
			}
			texts, status := w.readUntilClose()
			want := tt.status
			if want == 0 {
				want = wsNormalClosure
			}
			if status != want {
				t.Errorf("Close status %d after %q, want %d", status, texts, want)
			}
			if len(texts) == 0 || !strings.HasPrefix(texts[0], tt.first+"\n") {
				t.Errorf("server frames %q, want the first to be %s", texts, tt.first)
			}
			if tt.status == wsProtocolError && (len(texts) == 0 || !strings.HasPrefix(texts[len(texts)-1], "ERROR\n")) {
				t.Errorf("server frames %q, want an ERROR before the close", texts)
			}
		})
	}
}

// TestClientIDRefused checks that a client-id that is not text (a NUL, a
// control character, invalid UTF-8) is refused with ERROR invalid and
// nothing stored or delivered, while a text one reaches the subscribers
// as sent; and that a client-id another transport stored with a NUL is
// left out of MESSAGE frames, never written raw.
func TestClientIDRefused(t *testing.T) {
	tests := []struct {
		name     string
		clientID string // as on the wire, escaped for STOMP 1.2
		want     string // the client-id the subscriber sees; "" when refused
	}{
		{"NUL", "a\x00b", ""},
		{"NUL alone", "\x00", ""},
		{"escape", "a\x1b[31mb", ""},
		{"tab", "a\tb", ""},
		{"DEL", "a\x7fb", ""},
		{"C1 next line", "a\u0085b", ""},
		{"carriage return, escaped", "a\\rb", ""},
		{"line feed, escaped", "a\\nb", ""},
		{"invalid UTF-8", "a\xffb", ""},
		{"text", "ok-1", "ok-1"},
		{"text with a colon, escaped", "a\\cb", "a:b"},
		{"text, not ASCII", "été-☃", "été-☃"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			alice, bob := e.chat.addUser("alice"), e.chat.addUser("bob")
			e.chat.addRoom("r1", alice, bob)
			sub := e.dial(t, "tcp")
			sub.connect("bob")
			sub.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1", "receipt:s"))
			sub.expect("RECEIPT")

			c := e.dial(t, "tcp")
			c.connect("alice")
			c.send(frame("SEND", "hi", "destination:/app/rooms.r1", "client-id:"+tt.clientID, "receipt:r"))
			if tt.want == "" {
				c.expect("ERROR", "code:invalid")
				c.expectClosed()
			} else {
				c.expect("RECEIPT", "receipt-id:r")
			}
			// A marker from elsewhere: whatever was delivered before it
			// is in.
			if _, _, err := e.chat.Send(t.Context(), alice, "r1", "marker", ""); err != nil {
				t.Fatal(err)
			}
			f := sub.expect("MESSAGE")
			if tt.want == "" {
				if string(f.Body) != "marker" {
					t.Errorf("subscriber got %v, want only the marker", f)
				}
				return
			}
			if got := string(f.Get("client-id")); got != tt.want {
				t.Errorf("MESSAGE client-id = %q, want %q", got, tt.want)
			}
		})
	}

	t.Run("stored with a NUL elsewhere", func(t *testing.T) {
		e := newEnv(t, Config{})
		e.chat.rawKeys = true
		alice := e.chat.addUser("alice")
		e.chat.addRoom("r1", alice)
		for _, tr := range transports {
			sub := e.dial(t, tr)
			sub.connect("alice")
			sub.send(frame("SUBSCRIBE", "", "id:0", "destination:/topic/rooms.r1", "receipt:s"))
			sub.expect("RECEIPT")
			if _, _, err := e.chat.Send(t.Context(), alice, "r1", "from REST "+tr, tr+"\x00MESSAGE\nforged:1\n\n\x00"); err != nil {
				t.Fatal(err)
			}
			f := sub.expect("MESSAGE", "seq")
			if _, ok := f.Lookup("client-id"); ok || f.Get("forged") != nil || !bytes.HasPrefix(f.Body, []byte("from REST")) {
				t.Errorf("%s: MESSAGE %v, want it without the client-id", tr, f)
			}
			sub.send(frame("DISCONNECT", "", "receipt:bye"))
			sub.expect("RECEIPT")
		}
	})
}
