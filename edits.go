package parley

import "context"

// MessageChanges is the part of Store that edits and deletes stored
// messages and lists the changes of a room (design §3a). Every edit and deletion takes the room's next change number
// (Room.LastChange + 1) in the same transaction that applies it, so the
// numbers of a room run 1, 2, 3, ... with no holes under any concurrency,
// as seqs do; the message records it (Message.Change). The commit events
// are EventEdited and EventDeleted, with the message in its new version.
type MessageChanges interface {
	// EditMessage replaces the body of message e.Seq of room e.RoomID and
	// returns it in its new version, with EditedAt set. Only its sender
	// may: CodeForbidden for anyone else. Fails with CodeNotFound for an
	// unknown room or seq, and CodeConflict for a deleted message. A
	// repeat of a keyed change (see ChangeKey) applies nothing.
	EditMessage(ctx context.Context, e Edit) (Message, error)
	// DeleteMessage makes message d.Seq of room d.RoomID a tombstone: the
	// same seq, an empty body, DeletedAt set; its text is gone from the
	// store and the search index. Its sender may, and anyone when
	// d.Moderator (the caller checked the role): CodeForbidden otherwise.
	// Deleting a tombstone changes nothing and returns it with deleted
	// false. Fails with CodeNotFound for an unknown room or seq. A repeat
	// of a keyed change (see ChangeKey) applies nothing: deleted false.
	DeleteMessage(ctx context.Context, d Deletion) (msg Message, deleted bool, err error)
	// Changed returns the room's messages whose Change is above after, in
	// change order, at most limit (clamped as for Page) of them, in their
	// current version. Fails with CodeNotFound for an unknown room.
	Changed(ctx context.Context, roomID string, after int64, limit int) ([]Message, error)
}

// Edit asks to replace a message's body; EditorID is who asks. ClientID,
// when not empty, is the editor's idempotency key (see ChangeKey).
type Edit struct {
	RoomID   string
	Seq      int64
	EditorID string
	Body     string
	ClientID string
	// Mentions are the resolved mentions of Body (mentions.go): they
	// replace the message's.
	Mentions MentionList
}

// Deletion asks to delete a message; ActorID is who asks, Moderator whether
// they are the room's owner or an admin (checked by the caller). ClientID,
// when not empty, is the actor's idempotency key (see ChangeKey).
type Deletion struct {
	RoomID    string
	Seq       int64
	ActorID   string
	Moderator bool
	ClientID  string
}

// ChangeKey is the idempotency key of an applied edit or deletion (design
// §5), stored in the transaction that applies the change: the same
// client_id from the same user in the same room never applies a second
// change, across restarts and nodes. A change's keys are a space of their
// own: a send's client_id never matches one.
//
// A repeat of a keyed change (the same seq, the same kind, for an edit the
// same body) applies nothing and returns the message as it is now: the
// version the change produced, with its change number, unless a later
// change has touched the message since, in which case the later version
// (a newer edit, or the tombstone: a repeated edit of a message deleted
// since succeeds with the tombstone), as a resent send returns its message
// as it is now. The key reused for another change (another seq, edit for
// deletion or back, or an edit with another body while the key's edit
// still stands) fails with CodeConflict and changes nothing. Only an
// applied change keeps its key: the deletion of a tombstone (nothing to
// apply) and a refused change keep none. A key holds no text: the body of
// a keyed edit is compared with the message's while that edit stands.
type ChangeKey struct {
	Seq     int64 // the message the change applied to
	Deleted bool  // a deletion; an edit otherwise
	Change  int64 // the change number it took
}

// Repeat decides what a change keyed like k (and found stored) returns,
// given the message at the change's seq as it is now: nil when it is a
// repeat of k's change (return cur, apply nothing), or the CodeConflict
// of a key reused for another change. body is the asked edit's body.
func (k ChangeKey) Repeat(clientID string, seq int64, deletion bool, body string, cur *Message) error {
	switch {
	case k.Seq != seq:
		return Errorf(CodeConflict, "client_id %q was used before for a change of message %d; use a new client_id for a new change", clientID, k.Seq)
	case k.Deleted != deletion:
		what := "an edit"
		if k.Deleted {
			what = "a deletion"
		}
		return Errorf(CodeConflict, "client_id %q was used before for %s of this message; use a new client_id for a new change", clientID, what)
	case !deletion && cur.Change == k.Change && cur.Body != body:
		return Errorf(CodeConflict, "client_id %q was used before for an edit with another body (change %d); use a new client_id for a new change", clientID, k.Change)
	}
	return nil
}
