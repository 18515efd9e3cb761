package rest

import (
	"bytes"
	"log/slog"
	"net/http"
	"testing"
)

// MuxForTest returns the Handler's ServeMux, which ServeHTTP skips for
// the hottest routes: the tests compare the two.
func (h *Handler) MuxForTest() http.Handler { return h.mux }

// CaptureLogs sends slog's default logger, at debug level, to the buffer
// it returns until t ends. Tests that call it must not run in parallel.
func CaptureLogs(t *testing.T) *bytes.Buffer {
	var logs bytes.Buffer
	prev := slog.Default()
	slog.SetDefault(slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	t.Cleanup(func() { slog.SetDefault(prev) })
	return &logs
}
