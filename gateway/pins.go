package gateway

import (
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
	name, pin := "pin-seq", true
	if _, ok := f.Lookup("unpin-seq"); ok {
		name, pin = "unpin-seq", false
	}
	u, roomID, seq, err := s.seqSend(f, name, false) // seqsend.go
	if err != nil {
		return parley.Message{}, err
	}
	ctx, cancel := s.seqContext()
	defer cancel()
	m, _, err := s.srv.chat.PinMessage(ctx, u, roomID, seq, pin)
	return m, s.uncommitted(err, "the pin", "send the pin again")
}
