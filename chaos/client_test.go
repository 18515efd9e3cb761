package chaos

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"parley"
	"parley/stomp"
)

// The clients of the suite: REST for accounts and rooms, and STOMP over
// WebSocket (the stomp codec's Reader on coder/websocket's net.Conn, as
// cmd/parley's tests connect) for sending and subscribing.

var restClient = &http.Client{Timeout: 15 * time.Second}

// call sends a JSON request to a node and decodes the answer into out.
func call(addr, token, method, path string, body, out any) (int, error) {
	var rd *bytes.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	} else {
		rd = bytes.NewReader(nil)
	}
	req, err := http.NewRequest(method, "http://"+addr+path, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := restClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if out != nil && resp.StatusCode < 300 {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.StatusCode, fmt.Errorf("%s %s: decode: %w", method, path, err)
		}
	}
	return resp.StatusCode, nil
}

// user is an account with a token.
type user struct {
	id, name, token string
}

// mustUser signs a fresh user up on addr and logs in.
func mustUser(t *testing.T, addr, label string) user {
	t.Helper()
	u := user{name: label + "-" + parley.NewID()[:8]}
	creds := map[string]string{"name": u.name, "password": "chaos-password-" + u.name}
	var acc struct{ ID string }
	if st, err := call(addr, "", "POST", "/api/users", creds, &acc); err != nil || st != http.StatusCreated {
		t.Fatalf("sign up %s: %d %v", u.name, st, err)
	}
	var tok struct{ Token string }
	if st, err := call(addr, "", "POST", "/api/tokens", creds, &tok); err != nil || st != http.StatusCreated {
		t.Fatalf("log in %s: %d %v", u.name, st, err)
	}
	u.id, u.token = acc.ID, tok.Token
	return u
}

// mustRoom creates a group room owned by owner and joins the others.
func mustRoom(t *testing.T, addr string, owner user, others ...user) string {
	t.Helper()
	var r struct{ ID string }
	if st, err := call(addr, owner.token, "POST", "/api/rooms", map[string]any{"kind": "group", "title": "chaos"}, &r); err != nil || st != http.StatusCreated {
		t.Fatalf("create room: %d %v", st, err)
	}
	for _, u := range others {
		if st, err := call(addr, u.token, "POST", "/api/rooms/"+r.ID+"/members", nil, nil); err != nil || st != http.StatusCreated {
			t.Fatalf("join %s: %d %v", u.name, st, err)
		}
	}
	return r.ID
}

// restMessage is a message as the REST API gives it.
type restMessage struct {
	Seq      int64  `json:"seq"`
	SenderID string `json:"sender_id"`
	Body     string `json:"body"`
	ClientID string `json:"client_id"`
}

// restHistory reads a room's whole history, oldest first, over REST.
func restHistory(addr, token, roomID string) ([]restMessage, error) {
	var all []restMessage
	var after int64
	for {
		var page struct{ Messages []restMessage }
		st, err := call(addr, token, "GET", fmt.Sprintf("/api/rooms/%s/messages?after=%d&limit=100", roomID, after), nil, &page)
		if err != nil || st != http.StatusOK {
			return all, fmt.Errorf("history after %d: %d %v", after, st, err)
		}
		all = append(all, page.Messages...)
		if len(page.Messages) < 100 {
			return all, nil
		}
		after = page.Messages[len(page.Messages)-1].Seq
	}
}

// stompConn is one STOMP session over WebSocket. Writes are safe on any
// goroutine; reading is for one goroutine.
type stompConn struct {
	ws   *websocket.Conn
	conn net.Conn
	r    *stomp.Reader
	wmu  sync.Mutex // serialises writes
}

// dialStomp opens /ws on addr and sends CONNECT with token, without
// heart-beats. It fails if CONNECTED does not come within 10 s.
func dialStomp(addr, token string) (*stompConn, error) {
	if addr == "" {
		return nil, fmt.Errorf("node is down")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+addr+"/ws", &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
	if err != nil {
		return nil, fmt.Errorf("websocket dial %s: %w", addr, err)
	}
	ws.SetReadLimit(-1)
	c := &stompConn{ws: ws, conn: websocket.NetConn(context.Background(), ws, websocket.MessageText)}
	c.r = stomp.NewReader(c.conn, stomp.Limits{})
	if err := c.write("CONNECT\naccept-version:1.2\nhost:parley\nheart-beat:0,0\nAuthorization:Bearer " + token + "\n\n\x00"); err != nil {
		c.close()
		return nil, err
	}
	f, err := c.next(10 * time.Second)
	if err != nil {
		c.close()
		return nil, fmt.Errorf("CONNECTED: %w", err)
	}
	if f.Command != stomp.Connected {
		c.close()
		return nil, &refusedError{code: string(f.Get("code")), text: describe(f)}
	}
	return c, nil
}

// refusedError is a CONNECT answered with ERROR.
type refusedError struct{ code, text string }

func (e *refusedError) Error() string { return "CONNECT refused: " + e.text }

func (c *stompConn) write(raw string) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.conn.Write([]byte(raw))
	return err
}

// next returns the next frame that is not a heart-beat, waiting at most
// d (0: no limit). The frame is valid until the next call.
func (c *stompConn) next(d time.Duration) (*stomp.Frame, error) {
	if d > 0 {
		c.conn.SetReadDeadline(time.Now().Add(d))
	} else {
		c.conn.SetReadDeadline(time.Time{})
	}
	for {
		f, err := c.r.Read()
		if err != nil || f.Command != stomp.Heartbeat {
			return f, err
		}
	}
}

// close closes the socket at once, without a closing handshake (the
// peer may be dead or stuck).
func (c *stompConn) close() { c.ws.CloseNow() }

// subscribeFrame is a SUBSCRIBE to a room's messages after since.
func subscribeFrame(roomID string, since int64) string {
	return fmt.Sprintf("SUBSCRIBE\nid:1\ndestination:/topic/rooms.%s\nsince-seq:%d\nreceipt:sub\n\n\x00", roomID, since)
}

// sendFrame is a receipted SEND with a client-id.
func sendFrame(roomID, clientID, body string) string {
	return fmt.Sprintf("SEND\ndestination:/app/rooms.%s\nclient-id:%s\nreceipt:%s\ncontent-type:text/plain\n\n%s\x00",
		roomID, clientID, clientID, body)
}

// describe is a short text of a frame for reports.
func describe(f *stomp.Frame) string {
	s := f.Command.String()
	if m := f.Get("message"); len(m) > 0 {
		s += " message:" + string(m)
	}
	if c := f.Get("code"); len(c) > 0 {
		s += " code:" + string(c)
	}
	if len(f.Body) > 0 && f.Command == stomp.Error {
		s += " " + strings.TrimSpace(string(f.Body))
	}
	return s
}
