package gateway

import (
	"strings"
	"testing"
	"time"
)

// TestSendNeverCommitted: a SEND whose commit does not come within
// SendTimeout, or is cut short by the server shutting down, is refused as
// unavailable (retry with the same client-id), never as an internal error.
func TestSendNeverCommitted(t *testing.T) {
	for _, tc := range []struct {
		name    string
		timeout time.Duration
		cut     bool // the server starts shutting down while the SEND waits
		want    string
	}{
		{"timeout", 100 * time.Millisecond, false, "not committed within"},
		{"shutdown", time.Minute, true, "send again with the same client-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, Config{SendTimeout: tc.timeout})
			alice := e.chat.addUser("alice")
			e.chat.addRoom("r1", alice)
			held := make(chan struct{}, 1)
			e.chat.mu.Lock()
			e.chat.held = held
			e.chat.mu.Unlock()
			c := e.dial(t, "tcp")
			c.connect("alice")
			c.send(frame("SEND", "hello", "destination:/app/rooms.r1", "client-id:c1", "receipt:s1"))
			<-held
			if tc.cut {
				e.srv.cancel() // what Shutdown does first, before it refuses the sessions
			}
			f := c.expect("ERROR", "code:unavailable", "message:unavailable", "receipt-id:s1")
			if !strings.Contains(string(f.Body), tc.want) {
				t.Errorf("ERROR body = %q, want it to say %q", f.Body, tc.want)
			}
			c.expectClosed()
		})
	}
}
