package gateway

import (
	"parley"
	"parley/stomp"
)

// refusalCodes are the error codes a session may be refused with, in the
// order of the refusal counters.
var refusalCodes = []string{
	parley.CodeInvalid, parley.CodeUnauthorized, parley.CodeForbidden, parley.CodeNotFound,
	parley.CodeTooLarge, parley.CodeRateLimited, parley.CodeSlowConsumer, parley.CodeUnavailable,
	parley.CodeConflict, parley.CodeRoomFull, parley.CodeNameTaken, parley.CodeInternal,
}

// refusalIndex is the position of code in refusalCodes (internal if none).
func refusalIndex(code string) int {
	for i, c := range refusalCodes {
		if c == code {
			return i
		}
	}
	return len(refusalCodes) - 1
}

// errorFrame builds the ERROR frame that refuses a client for err. It is
// the only place that maps a parley error code to STOMP: the message header
// is a short text for the code, the code header the code itself, the body
// the human message; receipt-id names the frame that failed when it asked
// for a receipt. Internal errors reach the client without detail.
func errorFrame(err error, receipt []byte) *stomp.Frame {
	code := parley.ErrorCode(err)
	var text string
	switch code {
	case parley.CodeInvalid:
		text = "invalid frame"
	case parley.CodeUnauthorized:
		text = "unauthorized"
	case parley.CodeForbidden:
		text = "forbidden"
	case parley.CodeNotFound:
		text = "not found"
	case parley.CodeTooLarge:
		text = "too large"
	case parley.CodeRateLimited:
		text = "rate limited"
	case parley.CodeSlowConsumer:
		text = "slow consumer"
	case parley.CodeUnavailable:
		text = "unavailable"
	case parley.CodeConflict, parley.CodeRoomFull, parley.CodeNameTaken:
		text = "conflict"
	default:
		code, text = parley.CodeInternal, "internal error"
	}
	var f stomp.Frame
	f.Command = stomp.Error
	f.Add("message", text)
	f.Add("code", code)
	if receipt != nil {
		f.AddBytes("receipt-id", receipt)
	}
	f.Add("content-type", "text/plain;charset=UTF-8")
	f.Body = []byte(parley.ErrorMessage(err))
	return &f
}
