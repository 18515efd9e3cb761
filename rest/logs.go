package rest

import (
	"context"
	"log/slog"
	"net/http"

	"parley"
)

// requestID is the id of a request in the log and in the X-Request-Id
// response header: the client's X-Request-Id when it is short printable
// ASCII (a proxy's id, so both logs name the request alike), else a new
// one.
func requestID(r *http.Request) string {
	id := r.Header.Get("X-Request-Id")
	if id == "" || len(id) > 64 {
		return parley.NewID()
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] >= 0x7f {
			return parley.NewID()
		}
	}
	return id
}

// logError logs a request's error: an internal one (a bug or a failed
// dependency) at error level with its detail, a refusal (any other code)
// at debug level with its code. Neither logs the query, a header or the
// body, so no token or password reaches the log.
func logError(r *http.Request, rid, route string, err error) {
	code := parley.ErrorCode(err)
	if code == parley.CodeInternal {
		slog.Error("http error", "request_id", rid, "route", route, "path", r.URL.Path, "err", err)
		return
	}
	if slog.Default().Enabled(context.Background(), slog.LevelDebug) {
		slog.Debug("http refusal", "request_id", rid, "route", route, "path", r.URL.Path, "code", code, "message", parley.ErrorMessage(err))
	}
}
