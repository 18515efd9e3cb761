package gateway

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
)

// TestWebSocketCloseFrame checks that a WebSocket session the server ends
// ends with a WebSocket Close frame after the last STOMP frame (RFC 6455
// §7.1.2), so that clients see a clean close with a status (stomp.js
// reports it in onWebSocketClose) and not an abnormal closure (1006).
func TestWebSocketCloseFrame(t *testing.T) {
	tests := []struct {
		name   string
		frames []string
		last   string // the last STOMP frame's command before the close, "" for none
		status websocket.StatusCode
	}{
		{"DISCONNECT with a receipt", []string{connectFrame, frame("DISCONNECT", "", "receipt:bye")}, "RECEIPT", websocket.StatusNormalClosure},
		{"DISCONNECT", []string{connectFrame, frame("DISCONNECT", "")}, "", websocket.StatusNormalClosure},
		{"refused", []string{frame("CONNECT", "", "accept-version:1.2", "passcode:nope")}, "ERROR", websocket.StatusNormalClosure},
		{"shutdown", []string{connectFrame}, "ERROR", websocket.StatusGoingAway},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, Config{})
			e.chat.addUser("alice")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			url := "ws" + strings.TrimPrefix(e.http.URL, "http") + "/ws"
			c, _, err := websocket.Dial(ctx, url, &websocket.DialOptions{Subprotocols: []string{"v12.stomp"}})
			if err != nil {
				t.Fatalf("websocket dial: %v", err)
			}
			defer c.CloseNow()
			for _, f := range tt.frames {
				if err := c.Write(ctx, websocket.MessageText, []byte(f)); err != nil {
					t.Fatalf("write: %v", err)
				}
			}
			if tt.name == "shutdown" {
				if _, data, err := c.Read(ctx); err != nil || !strings.HasPrefix(string(data), "CONNECTED") {
					t.Fatalf("read = %q, %v; want CONNECTED", data, err)
				}
				go e.srv.Shutdown(ctx)
			}
			var got []string
			for {
				_, data, err := c.Read(ctx)
				if err != nil {
					if s := websocket.CloseStatus(err); s != tt.status {
						t.Errorf("after %q: read error %v (close status %d), want a Close frame with status %d", got, err, s, tt.status)
					}
					break
				}
				if cmd, _, _ := strings.Cut(string(data), "\n"); cmd != "" {
					got = append(got, cmd)
				}
			}
			if tt.last != "" && (len(got) == 0 || got[len(got)-1] != tt.last) {
				t.Errorf("frames before the close = %q, want the last to be %s", got, tt.last)
			}
		})
	}
}

var connectFrame = frame("CONNECT", "", "accept-version:1.2", "passcode:token-alice", "heart-beat:0,0")
