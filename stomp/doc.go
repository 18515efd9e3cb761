// Package stomp is a STOMP 1.0, 1.1 and 1.2 frame codec: a Reader that
// decodes frames from a bufio.Reader and Append functions that encode frames
// into caller-supplied byte slices. It has no goroutines and no network code;
// the gateway runs sessions over WebSocket and TCP on top of it.
//
// The codec is built for a server's hot path. Reading and writing a typical
// SEND or MESSAGE frame allocates nothing in steady state: a Frame returned by
// Reader.Read lives in memory owned by the Reader and is valid until the next
// Read (Clone copies it), header values are []byte views, and encoders append
// to a buffer the caller reuses. Prepare encodes a frame once for many
// recipients that differ only in a few headers (such as subscription).
//
// Header names and values are escaped as the protocol version requires:
// not at all in 1.0 and in CONNECT and CONNECTED frames, \n \c \\ in 1.1, and
// \r \n \c \\ in 1.2. The Reader starts at version 1.2, which reads any
// CONNECT frame, and the session switches it with SetVersion after
// negotiating (see Negotiate and NegotiateHeartBeat).
//
// Every error returned by the Reader is final: the stream has lost its frame
// boundary and the session should answer with an ERROR frame and close.
// Errors can be told apart with errors.Is (ErrMalformed, ErrUnknownCommand,
// ErrBadEscape, ErrTooLarge) and errors.As (*LimitError).
//
// It imports nothing of the project.
package stomp
