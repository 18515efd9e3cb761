package gateway

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	"parley"
	"parley/stomp"
)

// Pins over STOMP (design §3b), in the pattern of edit-seq, delete-seq
// and react-seq: a SEND to /app/rooms.{id} with header pin-seq: N and an
// empty body pins message N; with unpin-seq: N it unpins it. The room's
// owner and admins may (either member of a direct room). It is answered,
// when the frame asks for a receipt, by a RECEIPT once committed, with
// headers seq, message-id and change (the change that now stands on the
// message). Both are idempotent: a repeat changes nothing and sends no
// event. A refusal is an ERROR with the chat service's code (forbidden
// for a member, not_found for an unknown seq, conflict for a deleted
// message or past parley.MaxPinsPerRoom). Pin SENDs count against the
// sending rate, as messages do.
//
// The event (roomevents.PinEvent) goes to /topic/rooms.{id}.events and
// /user/queue/events: header event: pin, with user, seq, action (pin or
// unpin), change, and for a pin pinned-by and pinned-at; since-change
// replays it (edits.go).

// isPinSend reports whether a SEND is a pin or an unpin.
func isPinSend(f *stomp.Frame) bool {
	_, pin := f.Lookup("pin-seq")
	_, unpin := f.Lookup("unpin-seq")
	return pin || unpin
}

// pin pins or unpins a message through the chat service; it returns the
// message in its new version once committed.
func (s *session) pin(f *stomp.Frame) (parley.Message, error) {
	dest := f.Get("destination")
	if !bytes.HasPrefix(dest, []byte(appPrefix)) || len(dest) == len(appPrefix) {
		return parley.Message{}, parley.Errorf(parley.CodeNotFound, "no destination %q: send to %s{roomId}", dest, appPrefix)
	}
	if _, ok := f.Lookup("transaction"); ok {
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "transactions are not supported")
	}
	pinV, pin := f.Lookup("pin-seq")
	unpinV, unpin := f.Lookup("unpin-seq")
	if pin && unpin || isChangeSend(f) || isReactSend(f) {
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "a SEND has pin-seq, unpin-seq, react-seq, edit-seq or delete-seq, one of them")
	}
	name, v := "pin-seq", pinV
	if unpin {
		name, v = "unpin-seq", unpinV
	}
	seq, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || seq < 1 {
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "%s must be a seq of 1 or more", name)
	}
	if len(f.Body) > 0 {
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "a SEND with %s has an empty body", name)
	}
	u := s.readUser()
	if allowed, _ := s.srv.sendLimit.Allow(u.ID); !allowed {
		return parley.Message{}, parley.Errorf(parley.CodeRateLimited, "over %g messages a second", s.srv.cfg.SendRate)
	}
	// Not under srv.ctx, as a send (see send).
	ctx, cancel := context.WithTimeout(s.srv.sendCtx, s.srv.cfg.SendTimeout)
	defer cancel()
	m, _, err := s.srv.chat.PinMessage(ctx, u, string(dest[len(appPrefix):]), seq, pin)
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded):
		err = parley.Errorf(parley.CodeUnavailable, "the pin was not committed within %v", s.srv.cfg.SendTimeout)
	case errors.Is(err, context.Canceled):
		err = parley.Errorf(parley.CodeUnavailable, "the server is shutting down; send the pin again")
	}
	return m, err
}
