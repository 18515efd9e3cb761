package rest

import (
	"context"
	"errors"
	"log/slog"
	"math/rand/v2"
	"net"
	"net/http"
	"strings"

	"parley"
)

// requestID is the id of a request in the log and in the X-Request-Id
// response header: the client's X-Request-Id when it is short printable
// ASCII (a proxy's id, so both logs name the request alike), else a new
// one.
func requestID(r *http.Request) string {
	id := r.Header.Get("X-Request-Id")
	if id == "" || len(id) > 64 {
		return newRequestID()
	}
	for i := 0; i < len(id); i++ {
		if id[i] <= ' ' || id[i] >= 0x7f {
			return newRequestID()
		}
	}
	return id
}

// newRequestID returns 128 random bits in the alphabet and length of
// parley.NewID, from math/rand/v2's per-thread generator: an id needs to
// be unique, not unguessable, and this one costs one allocation.
func newRequestID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	var b [26]byte
	hi, lo := rand.Uint64(), rand.Uint64()
	for i := range 12 { // 60 bits of hi
		b[i] = alphabet[hi>>(59-5*i)&31]
	}
	// the last 4 bits of hi and the first of lo
	b[12] = alphabet[(hi&15)<<1|lo>>63]
	for i := range 12 { // 60 of the other 63 bits of lo
		b[13+i] = alphabet[lo>>(58-5*i)&31]
	}
	b[25] = alphabet[(lo&7)<<2] // its last 3, padded as base32 pads them
	return string(b[:])
}

// logError logs a request's error: an internal one (a bug or a failed
// dependency) at error level with its detail, a refusal (any other code)
// at debug level with its code. Neither logs the query, a header or the
// body, so no token or password reaches the log.
func logError(r *http.Request, rid, route string, err error) {
	code := parley.ErrorCode(err)
	if code == parley.CodeInternal {
		slog.Error("http error", "request_id", rid, "route", route, "path", loggedPath(r), "err", err)
		return
	}
	if slog.Default().Enabled(context.Background(), slog.LevelDebug) {
		slog.Debug("http refusal", "request_id", rid, "route", route, "path", loggedPath(r), "code", code, "message", parley.ErrorMessage(err))
	}
}

// logCut logs the error of a request whose answer had begun when it
// failed. A failed write to the connection (the client hung up, or stopped
// reading past the write deadline) is the client's doing: debug level, so
// that a thousand clients dropping at once do not flood the log with
// errors. Anything else after the status was sent is a bug of the route's,
// logged at error level.
func logCut(r *http.Request, rid, route string, err error) {
	var ne *net.OpError
	if !errors.As(err, &ne) {
		slog.Error("http error after the response began", "request_id", rid, "route", route, "path", loggedPath(r), "err", err)
		return
	}
	if slog.Default().Enabled(context.Background(), slog.LevelDebug) {
		slog.Debug("http response cut short", "request_id", rid, "route", route, "path", loggedPath(r), "err", err)
	}
}

// loggedPath is the request's path as the log may show it: an incoming
// webhook's path holds its key (the URL is the secret), so it is shown as
// its pattern.
func loggedPath(r *http.Request) string {
	if strings.HasPrefix(r.URL.Path, "/api/hooks/") {
		return "/api/hooks/{key}"
	}
	return r.URL.Path
}
