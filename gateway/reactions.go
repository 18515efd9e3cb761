package gateway

import (
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
	add := true
	switch a := string(f.Get("action")); a {
	case "", "add":
	case "remove":
		add = false
	default:
		return parley.Message{}, parley.Errorf(parley.CodeInvalid, "action must be add or remove, not %q", a)
	}
	u, roomID, seq, err := s.seqSend(f, "react-seq", false) // seqsend.go
	if err != nil {
		return parley.Message{}, err
	}
	ctx, cancel := s.seqContext()
	defer cancel()
	m, _, err := s.srv.chat.React(ctx, u, roomID, seq, string(f.Get("emoji")), add)
	return m, s.uncommitted(err, "the reaction", "send the reaction again")
}
