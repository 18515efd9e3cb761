package gateway

import (
	"context"
	"strconv"

	"parley"
	"parley/roomevents"
	"parley/stomp"
)

// Message changes over STOMP (design §4): a SEND to /app/rooms.{id} with
// header edit-seq: N replaces message N's text with the body (its sender
// only); with delete-seq: N and an empty body it deletes message N (its
// sender, or the room's owner or an admin). Either is answered, when the
// frame asks for a receipt, by a RECEIPT once committed, with headers seq,
// message-id and change (the change that now stands on the message: the
// edit's or the deletion's; for a deletion of a tombstone, the one that
// deleted it). A refusal is an ERROR with the chat service's code.
//
// client-id: the change's idempotency key (parley.ChangeKey), kept by the
// store with the change. A client that resends a change after a lost
// RECEIPT (the reconnect path) with the same client-id gets a RECEIPT with
// the same seq and message-id, and the change that now stands on the
// message: the first change's own when nothing touched the message since,
// a later one's otherwise; no second change is made and no event sent.
// The client-id reused for another change (another seq, edit for deletion
// or back, an edit with another body) is an ERROR conflict, as a send's
// client-id reused with another body is. Without a client-id a repeated
// deletion still changes nothing (a tombstone stays one, same change) and
// a repeated edit is a new edit (the same text again, a new change).
//
// since-change: N on SUBSCRIBE to /topic/rooms.{id}.events replays, after
// the RECEIPT, every change of the room after N as it stands now (one
// event per changed message, roomevents.ReplayEvent: edited, deleted,
// reaction or thread, at its latest change, in
// change order: a message edited then deleted while the client was away
// comes once, deleted), read from the store page by page, then goes live.
// The subscription is held (roomevents.Sub.Hold) from its registration on,
// and StartAfter drops the live changes at or below the last one
// replayed: no gap, no duplicate, as since-seq for messages.

// isChangeSend reports whether a SEND is an edit or a deletion.
func isChangeSend(f *stomp.Frame) bool {
	_, edit := f.Lookup("edit-seq")
	_, del := f.Lookup("delete-seq")
	return edit || del
}

// change edits or deletes a message through the chat service; it returns
// the message in its new version once committed.
func (s *session) change(f *stomp.Frame) (parley.Message, error) {
	name, edit := "edit-seq", true
	if _, ok := f.Lookup("delete-seq"); ok {
		name, edit = "delete-seq", false
	}
	u, roomID, seq, err := s.seqSend(f, name, edit) // seqsend.go
	if err != nil {
		return parley.Message{}, err
	}
	clientID := string(f.Get("client-id")) // checked by EditMessage/DeleteMessage
	ctx, cancel := s.seqContext()
	defer cancel()
	var m parley.Message
	if edit {
		m, err = s.srv.chat.EditMessage(ctx, u, roomID, seq, string(f.Body), clientID)
	} else {
		m, err = s.srv.chat.DeleteMessage(ctx, u, roomID, seq, clientID)
	}
	return m, s.uncommitted(err, "the change", "send the change again with the same client-id")
}

// changeReceipt queues the RECEIPT of a change: seq, message-id, change.
func (s *session) changeReceipt(id []byte, m *parley.Message) {
	var r stomp.Frame
	r.Command = stomp.Receipt
	r.AddBytes("receipt-id", id)
	r.AddInt("seq", m.Seq)
	r.Add("message-id", m.ID)
	r.AddInt("change", m.Change)
	s.mu.Lock()
	defer s.mu.Unlock()
	b := encodeControl(&r, s.version)
	s.enqueueLocked(outItem{cmd: stomp.Receipt, raw: b}, len(b))
}

// sinceChange reads a SUBSCRIBE's since-change header: -1 when absent.
func sinceChange(f *stomp.Frame, roomID string) (int64, error) {
	v, ok := f.Lookup("since-change")
	if !ok {
		return -1, nil
	}
	if roomID == "" {
		return 0, parley.Errorf(parley.CodeInvalid, "since-change applies to %s{roomId}%s only", topicPrefix, eventsSuffix)
	}
	n, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || n < 0 {
		return 0, parley.Errorf(parley.CodeInvalid, "since-change must be a change of 0 or more")
	}
	return n, nil
}

// checkSinceChange refuses a since-change past the room's last change:
// the live changes up to it would be dropped as already seen.
func (s *session) checkSinceChange(ctx context.Context, u parley.User, roomID string, since int64) error {
	r, err := s.srv.chat.Room(ctx, u, roomID)
	if err != nil {
		return err
	}
	if since > r.LastChange {
		return parley.Errorf(parley.CodeInvalid, "since-change %d is past the room's last change %d", since, r.LastChange)
	}
	return nil
}

// replayChanges sends a since-change subscription the room's changes
// after since, then makes it live.
func (s *session) replayChanges(sub *subscription, since int64) {
	err := s.replay(sub, since)
	if err != nil && sub.ctx.Err() == nil && !sub.Removed() {
		s.refuse(err, nil)
	}
}

func (s *session) replay(sub *subscription, after int64) error {
	u := s.readUser()
	events := s.srv.cfg.Events
	for {
		ctx, cancel := context.WithTimeout(sub.ctx, s.srv.cfg.SendTimeout)
		page, err := s.srv.chat.Changed(ctx, u, sub.RoomID, after, parley.MaxPageLimit)
		cancel()
		if err != nil {
			return err
		}
		for i := range page {
			if page[i].Change <= after {
				continue
			}
			if sub.Removed() {
				return nil // the user left: Events dropped it (and said so for a removal)
			}
			if err := sub.deliverEventWait(sub.ctx, roomevents.ReplayEvent(&page[i])); err != nil {
				return err
			}
			after = page[i].Change
		}
		// A short page is the end of what was committed before the read;
		// what came since is held for the subscription.
		if len(page) < parley.MaxPageLimit {
			events.StartAfter(&sub.ev, after)
			return nil
		}
	}
}

// deliverEventWait queues a replayed event, waiting while the queue is
// over half full (as deliverWait does for history).
func (sub *subscription) deliverEventWait(ctx context.Context, ev *roomevents.RoomEvent) error {
	return sub.enqueueWait(ctx, outItem{ev: ev, sub: sub}, sub.encodedEvent(ev).size)
}
