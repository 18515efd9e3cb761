package rest

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
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

// writeError writes err as the JSON error shape. Internal errors are logged
// and reach the client without detail.
func writeError(w http.ResponseWriter, err error) {
	var body errorBody
	body.Error.Code = parley.ErrorCode(err)
	body.Error.Message = parley.ErrorMessage(err)
	if body.Error.Code == parley.CodeInternal {
		slog.Error("http api", "err", err)
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
func (h *Handler) decode(w http.ResponseWriter, r *http.Request, v any) error {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.maxBytes))
	if err != nil {
		return decodeError(err)
	}
	// encoding/json would quietly replace invalid UTF-8 with U+FFFD: a
	// stored message must be what the client sent, so refuse it instead.
	if !utf8.Valid(data) {
		return parley.Errorf(parley.CodeInvalid, "request body must be valid UTF-8")
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
