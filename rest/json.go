package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"parley"
)

// errorStatus maps an error code to its HTTP status. It is the only place
// that does.
func errorStatus(code string) int {
	switch code {
	case parley.CodeInvalid:
		return http.StatusBadRequest
	case parley.CodeUnauthorized:
		return http.StatusUnauthorized
	case parley.CodeForbidden:
		return http.StatusForbidden
	case parley.CodeNotFound:
		return http.StatusNotFound
	case parley.CodeConflict, parley.CodeNameTaken, parley.CodeRoomFull:
		return http.StatusConflict
	case parley.CodeTooLarge:
		return http.StatusRequestEntityTooLarge
	case parley.CodeRateLimited:
		return http.StatusTooManyRequests
	case parley.CodeUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// retryUnavailable is the Retry-After of a 503 unavailable, in seconds: a
// store outage, a full disk, a shutdown (the gateway's /ws says the same).
const retryUnavailable = "5"

// writeError writes err as the JSON error shape, a 503 with Retry-After.
// Internal errors reach the client without detail (logError logs them).
func writeError(w http.ResponseWriter, err error) {
	var body errorBody
	body.Error.Code = parley.ErrorCode(err)
	body.Error.Message = parley.ErrorMessage(err)
	if body.Error.Code == parley.CodeUnavailable {
		w.Header().Set("Retry-After", retryUnavailable)
	}
	var re *parley.RetryError
	if errors.As(err, &re) {
		w.Header().Set("Retry-After", strconv.FormatInt(int64(math.Ceil(re.After.Seconds())), 10))
	}
	writeJSON(w, errorStatus(body.Error.Code), body)
}

func writeJSON(w http.ResponseWriter, status int, v any) error {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	return json.NewEncoder(w).Encode(v)
}

// decode reads exactly one JSON object into v: the body capped, unknown
// fields rejected, trailing data rejected, every failure a parley.Error.
//
// The body has the server's whole ReadTimeout (--http-read-timeout) from
// here: a route may wait before it reads it (a token check on a store that
// stalls), and that wait is the server's, not the client's. Without this,
// the deadline set when the request began would pass while the body sat
// unread, and the read would fail a client that had sent it all in time.
func (h *Handler) decode(w http.ResponseWriter, r *http.Request, v any) error {
	if srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server); ok && srv.ReadTimeout > 0 {
		// Best effort: a writer that cannot move the deadline keeps the
		// server's.
		http.NewResponseController(w).SetReadDeadline(time.Now().Add(srv.ReadTimeout))
	}
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBytes))
	if err != nil {
		return decodeError(err)
	}
	// encoding/json would quietly replace invalid UTF-8 with U+FFFD: a
	// stored message must be what the client sent, so refuse it instead.
	if !utf8.Valid(data) {
		return parley.Errorf(parley.CodeInvalid, "request body must be valid UTF-8")
	}
	// It would do the same with an escaped half of a UTF-16 surrogate
	// pair ("\ud800"), which encodes no character.
	if loneSurrogate(data) {
		return parley.Errorf(parley.CodeInvalid, `request body escapes half a surrogate pair (\uD800 to \uDFFF not in a high-low pair)`)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeError(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return parley.Errorf(parley.CodeInvalid, "request body must be one JSON object")
	}
	return nil
}

func decodeError(err error) error {
	var (
		tooLarge *http.MaxBytesError
		syntax   *json.SyntaxError
		typ      *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &tooLarge):
		return parley.Errorf(parley.CodeTooLarge, "request body is over %d bytes", tooLarge.Limit)
	case errors.As(err, &syntax), errors.Is(err, io.ErrUnexpectedEOF):
		return parley.Errorf(parley.CodeInvalid, "malformed JSON")
	case errors.Is(err, io.EOF):
		return parley.Errorf(parley.CodeInvalid, "request body must be a JSON object")
	case errors.As(err, &typ):
		if typ.Field == "" {
			return parley.Errorf(parley.CodeInvalid, "request body must be a JSON object")
		}
		return parley.Errorf(parley.CodeInvalid, "field %q must be a %s", typ.Field, typ.Type)
	default:
		// Unknown fields and invalid UTF-8 surface here as plain errors
		// from encoding/json; their text is safe to show.
		return parley.Errorf(parley.CodeInvalid, "invalid request body: %v", err)
	}
}

// loneSurrogate reports whether a JSON string in data has a \u escape of
// half a UTF-16 surrogate pair that is not a high half (D800-DBFF)
// directly followed by the escape of a low half (DC00-DFFF). Valid JSON
// has backslashes and quotes only inside strings; on invalid JSON the
// answer does not matter, as the decoder refuses it anyway.
func loneSurrogate(data []byte) bool {
	in := false // inside a string
	for i := 0; i < len(data); i++ {
		if data[i] == '"' {
			in = !in
			continue
		}
		if data[i] != '\\' || !in {
			continue
		}
		// data[i] is the backslash of an escape.
		if i+1 >= len(data) || data[i+1] != 'u' {
			i++ // skip the escaped byte (it may be a quote)
			continue
		}
		switch r := hex4(data[i+2:]); {
		case r < 0xd800 || r > 0xdfff: // not a surrogate (or not 4 hex digits)
		case r >= 0xdc00: // a low half with no high half before it
			return true
		default:
			lo := -1
			if i+7 < len(data) && data[i+6] == '\\' && data[i+7] == 'u' {
				lo = hex4(data[i+8:])
			}
			if lo < 0xdc00 || lo > 0xdfff {
				return true
			}
			i += 6 // the low half's backslash: skipped with its u below
		}
		i++ // the u
	}
	return false
}

// hex4 returns the value of the 4 hex digits that b starts with, or -1.
func hex4(b []byte) int {
	if len(b) < 4 {
		return -1
	}
	n := 0
	for _, c := range b[:4] {
		switch {
		case '0' <= c && c <= '9':
			n = n<<4 | int(c-'0')
		case 'a' <= c && c <= 'f':
			n = n<<4 | int(c-'a'+10)
		case 'A' <= c && c <= 'F':
			n = n<<4 | int(c-'A'+10)
		default:
			return -1
		}
	}
	return n
}
