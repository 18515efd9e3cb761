package parley

import (
	"errors"
	"fmt"
	"time"
)

// Error codes. Each transport maps them to its wire in exactly one place:
// rest to an HTTP status, gateway to a STOMP ERROR frame.
const (
	CodeInvalid      = "invalid"       // malformed or out-of-range input
	CodeUnauthorized = "unauthorized"  // missing, wrong or expired credentials
	CodeForbidden    = "forbidden"     // authenticated but not allowed (not a member)
	CodeNotFound     = "not_found"     // no such user, room or message
	CodeConflict     = "conflict"      // the request conflicts with stored state
	CodeNameTaken    = "name_taken"    // the user name is registered already
	CodeRoomFull     = "room_full"     // member_count has reached capacity
	CodeTooLarge     = "too_large"     // a body or frame over its limit
	CodeRateLimited  = "rate_limited"  // too many requests
	CodeUnavailable  = "unavailable"   // a dependency is down or shutting down
	CodeInternal     = "internal"      // a bug or an unexpected failure
	CodeSlowConsumer = "slow_consumer" // a client did not keep up with its deliveries
)

// Error is an error a user may see: a stable code and a human message.
type Error struct {
	Code    string
	Message string
}

// Error implements the error interface.
func (e *Error) Error() string { return e.Code + ": " + e.Message }

// Errorf returns an *Error with the given code and formatted message.
func Errorf(code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// ErrorCode returns the code of the *Error in err's chain, CodeInternal for
// any other non-nil error, and "" for nil.
func ErrorCode(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the message of the *Error in err's chain; other
// errors are internal and get a generic message, so that no driver detail
// reaches a client.
func ErrorMessage(err error) string {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return "internal error"
}

// RetryError is an *Error that may be tried again after a wait: the
// transports say when (REST Retry-After, a STOMP ERROR's retry-after).
// errors.As finds the *Error inside it.
type RetryError struct {
	Err   *Error
	After time.Duration
}

// RetryAfter returns err with the wait after which it may be tried again.
func RetryAfter(after time.Duration, err *Error) error { return &RetryError{Err: err, After: after} }

// Error implements the error interface.
func (e *RetryError) Error() string { return e.Err.Error() }

// Unwrap returns the *Error.
func (e *RetryError) Unwrap() error { return e.Err }
