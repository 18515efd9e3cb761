package rest

import (
	"errors"
	"net"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
)

// TestLogCut: once an answer has begun, a failed write to the connection
// is the client's doing (debug level), and any other error is a route's
// bug (error level). Not parallel (CaptureLogs).
func TestLogCut(t *testing.T) {
	logs := CaptureLogs(t)
	r := httptest.NewRequest("GET", "/api/me", nil)
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.ECONNRESET)}, `level=DEBUG msg="http response cut short"`},
		{errors.New("json: unsupported value"), `level=ERROR msg="http error after the response began"`},
	} {
		logs.Reset()
		logCut(r, "rid", "GET /api/me", tt.err)
		if !strings.Contains(logs.String(), tt.want) {
			t.Errorf("logCut(%v) logged %q, want a record %s", tt.err, logs.String(), tt.want)
		}
	}
}
