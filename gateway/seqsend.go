package gateway

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	"parley"
	"parley/stomp"
)

// SENDs that act on a message already in a room name it by a header:
// edit-seq and delete-seq (edits.go), react-seq (reactions.go), pin-seq
// and unpin-seq (pins.go). A SEND carries one of them at most.
var seqHeaders = [...]string{"edit-seq", "delete-seq", "react-seq", "pin-seq", "unpin-seq"}

// seqSend checks a SEND that acts on message N of a room through header
// name (one of seqHeaders) and counts it against the sender's rate, as a
// message: its destination is /app/rooms.{id}, it is in no transaction,
// it carries no other of seqHeaders, N is a seq of 1 or more, and its body
// is empty unless withBody (an edit's new text). It returns the sender,
// the room and N.
func (s *session) seqSend(f *stomp.Frame, name string, withBody bool) (u parley.User, roomID string, seq int64, err error) {
	dest := f.Get("destination")
	if !bytes.HasPrefix(dest, []byte(appPrefix)) || len(dest) == len(appPrefix) {
		return u, "", 0, parley.Errorf(parley.CodeNotFound, "no destination %q: send to %s{roomId}", dest, appPrefix)
	}
	if _, ok := f.Lookup("transaction"); ok {
		return u, "", 0, parley.Errorf(parley.CodeInvalid, "transactions are not supported")
	}
	for _, h := range seqHeaders {
		if _, ok := f.Lookup(h); ok && h != name {
			return u, "", 0, parley.Errorf(parley.CodeInvalid, "a SEND has one of edit-seq, delete-seq, react-seq, pin-seq and unpin-seq, not %s and %s", name, h)
		}
	}
	seq, err = strconv.ParseInt(string(f.Get(name)), 10, 64)
	if err != nil || seq < 1 {
		return u, "", 0, parley.Errorf(parley.CodeInvalid, "%s must be a seq of 1 or more", name)
	}
	if !withBody && len(f.Body) > 0 {
		return u, "", 0, parley.Errorf(parley.CodeInvalid, "a SEND with %s has an empty body", name)
	}
	u = s.readUser()
	if allowed, _ := s.srv.sendLimit.Allow(u.ID); !allowed {
		return u, "", 0, parley.Errorf(parley.CodeRateLimited, "over %g messages a second", s.srv.cfg.SendRate)
	}
	return u, string(dest[len(appPrefix):]), seq, nil
}

// seqContext is the context of a seqSend's chat call: not under srv.ctx,
// as a send (see send), and cut short by SendTimeout.
func (s *session) seqContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(s.srv.sendCtx, s.srv.cfg.SendTimeout)
}

// uncommitted says what a client should do about a chat call cut short
// by seqContext: what is "the pin", "the change"; again what to do once
// the server is back. Other errors, and nil, are returned as they are.
func (s *session) uncommitted(err error, what, again string) error {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return parley.Errorf(parley.CodeUnavailable, "%s was not committed within %v", what, s.srv.cfg.SendTimeout)
	case errors.Is(err, context.Canceled):
		return parley.Errorf(parley.CodeUnavailable, "the server is shutting down; %s", again)
	}
	return err
}
