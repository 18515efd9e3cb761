package gateway

import (
	"strings"
	"testing"
	"time"

	"parley/stomp"
)

// TestClientCannotStretchTimeouts reproduces issue 10 defect 4: the
// largest heart-beat a client may ask for (2^31-1 ms, about 25 days) must
// neither stretch the time a frame may take nor the time a silent client
// is kept.
func TestClientCannotStretchTimeouts(t *testing.T) {
	tests := []struct {
		name      string
		cfg       Config
		heartBeat string
		then      string // sent after CONNECTED
		body      string // of the ERROR that must follow
	}{
		{
			name:      "an unfinished SEND times out after the frame timeout",
			cfg:       Config{FrameTimeout: 100 * time.Millisecond},
			heartBeat: "2147483647,0",
			then:      "SEND\ndestination:/app/rooms.r1\n\nno NUL follows",
			body:      "incomplete frame",
		},
		{
			name: "a silent client is dropped after twice the largest heart-beat",
			cfg: Config{
				HeartBeat:    stomp.HeartBeat{Send: 0, Receive: 20 * time.Millisecond},
				MaxHeartBeat: 50 * time.Millisecond,
			},
			heartBeat: "2147483647,0",
			body:      "no heart-beat from the client for over 100ms",
		},
		{
			name: "a client asking for rare server heart-beats gets them at the cap",
			cfg: Config{
				HeartBeat:    stomp.HeartBeat{Send: 20 * time.Millisecond, Receive: 20 * time.Millisecond},
				MaxHeartBeat: 50 * time.Millisecond,
			},
			heartBeat: "0,2147483647",
			then:      "heart-beat",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			forEachTransport(t, tt.cfg, func(t *testing.T, e *env, tr string) {
				alice := e.chat.addUser("alice")
				e.chat.addRoom("r1", alice)
				c := e.dial(t, tr)
				c.send(frame("CONNECT", "", "accept-version:1.2", "passcode:token-alice", "heart-beat:"+tt.heartBeat))
				c.expect("CONNECTED")
				if tt.then == "heart-beat" {
					c.conn.SetReadDeadline(time.Now().Add(10 * time.Second))
					if f, err := c.r.Read(); err != nil || f.Command != stomp.Heartbeat {
						t.Fatalf("read = %v, %v; want a heart-beat", f, err)
					}
					return
				}
				if tt.then != "" {
					c.send(tt.then)
				}
				f := c.expect("ERROR", "code:invalid")
				if !strings.Contains(string(f.Body), tt.body) {
					t.Errorf("ERROR body %q, want %q", f.Body, tt.body)
				}
				c.expectClosed()
			})
		})
	}
}
