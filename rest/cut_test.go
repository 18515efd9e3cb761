package rest_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"

	"parley/rest"
)

// TestResponseCutShort: a client that goes away while its answer is being
// written (wrk closing its connections, a phone losing its network) makes
// the write fail. That answer has begun, so no error response follows it
// (net/http would log "superfluous response.WriteHeader call" for each),
// and the hang-up is the client's, not a server error: it is logged at
// debug level, never at error. Not parallel (CaptureLogs).
func TestResponseCutShort(t *testing.T) {
	e := newEnv(t, nil)
	ann := e.mustSignUp("ann")
	room := e.mustCreateRoom(ann, "Cut")
	e.mustExpect(e.do("POST", "/api/rooms/"+room.ID+"/messages", ann, map[string]any{"body": "hello"}), "send", http.StatusCreated, nil)

	logs := rest.CaptureLogs(t)

	// The memo's routes, one written through writeEncoded, one through
	// writeJSON.
	paths := []string{"/api/me/rooms", "/api/rooms/" + room.ID + "/messages", "/api/me", "/api/rooms/" + room.ID}
	for _, p := range paths {
		w := &hungUpWriter{header: http.Header{}}
		req := httptest.NewRequest("GET", p, nil)
		req.Header.Set("Authorization", "Bearer "+ann)
		e.h.ServeHTTP(w, req)
		if w.statuses != 1 || w.code != http.StatusOK {
			t.Errorf("GET %s to a client gone: %d statuses written, the first %d; want one, 200", p, w.statuses, w.code)
		}
	}
	out := logs.String()
	if strings.Contains(out, "level=ERROR") {
		t.Errorf("a client's hang-up was logged as a server error:\n%s", out)
	}
	if n := strings.Count(out, `msg="http response cut short"`); n != len(paths) {
		t.Errorf("%d debug records of a response cut short, want %d:\n%s", n, len(paths), out)
	}
}

// hungUpWriter is the ResponseWriter of a connection whose peer has gone:
// every write fails as net/http's does then. It counts the statuses
// written, as net/http does (the first Write writes 200 when none was).
type hungUpWriter struct {
	header   http.Header
	statuses int
	code     int
}

func (w *hungUpWriter) Header() http.Header { return w.header }

func (w *hungUpWriter) WriteHeader(code int) {
	w.statuses++
	if w.code == 0 {
		w.code = code
	}
}

func (w *hungUpWriter) Write([]byte) (int, error) {
	if w.code == 0 {
		w.WriteHeader(http.StatusOK)
	}
	return 0, &net.OpError{Op: "write", Net: "tcp", Err: os.NewSyscallError("write", syscall.EPIPE)}
}
