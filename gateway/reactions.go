package gateway

import (
	"bytes"
	"context"
	"errors"
	"strconv"

	"parley"
	"parley/stomp"
)

// Reactions over STOMP (design §3b): a SEND to /app/rooms.{id} with
// header react-seq: N and emoji: E, and an empty body, puts the emoji on
// message N; with action: remove as well it takes it off (action: add is
// the default). It is answered, when the frame asks for a receipt, by a
// RECEIPT once committed, with headers seq, message-id and change (the
// change that now stands on the message). Both are idempotent: a repeat
// changes nothing and sends no event. A refusal is an ERROR with the chat
// service's code (invalid emoji, not a member, a deleted message, the
// bounds). Reaction SENDs count against the sending rate, as messages do.
//
// The event (roomevents.ReactionEvent) goes to /topic/rooms.{id}.events
// and /user/queue/events: header event: reaction, with user, seq, emoji,
// action (added or removed) and change; since-change replays it (edits.go).

// isReactSend reports whether a SEND is a reaction.
func isReactSend(f *stomp.Frame) bool {
	_, ok := f.Lookup("react-seq")
	return ok
}

// react adds or removes a reaction through the chat service; it returns
// the message in its new version once committed.
func (s *session) react(f *stomp.Frame) (parley.Message, error) {
	dest := f.Get("destination")
	if !bytes.HasPrefix(dest, []byte(appPrefix)) || len(dest) == len(appPrefix) {
		return parley.Message{}, parley.Errorf(parley.CodeNotFound, "no destination %q: send to %s{roomId}", dest, appPrefix)
	}
	if _, ok := f.Lookup("transaction"); ok {
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "transactions are not supported")
	}
	if isChangeSend(f) {
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "a SEND has react-seq, edit-seq or delete-seq, one of them")
	}
	seq, err := strconv.ParseInt(string(f.Get("react-seq")), 10, 64)
	if err != nil || seq < 1 {
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "react-seq must be a seq of 1 or more")
	}
	if len(f.Body) > 0 {
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "a SEND with react-seq has an empty body")
	}
	add := true
	switch a := string(f.Get("action")); a {
	case "", "add":
	case "remove":
		add = false
	default:
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "action must be add or remove, not %q", a)
	}
	u := s.readUser()
	if allowed, _ := s.srv.sendLimit.Allow(u.ID); !allowed {
		return parley.Message{}, parley.Errorf(parley.CodeRateLimited, "over %g messages a second", s.srv.cfg.SendRate)
	}
	// Not under srv.ctx, as a send (see send).
	ctx, cancel := context.WithTimeout(s.srv.sendCtx, s.srv.cfg.SendTimeout)
	defer cancel()
	m, _, err := s.srv.chat.React(ctx, u, string(dest[len(appPrefix):]), seq, string(f.Get("emoji")), add)
	switch {
	case err == nil:
	case errors.Is(err, context.DeadlineExceeded):
		err = parley.Errorf(parley.CodeUnavailable, "the reaction was not committed within %v", s.srv.cfg.SendTimeout)
	case errors.Is(err, context.Canceled):
		err = parley.Errorf(parley.CodeUnavailable, "the server is shutting down; send the reaction again")
	}
	return m, err
}
