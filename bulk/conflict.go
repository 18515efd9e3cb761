package bulk

import "parley"

// The conflicts of an import (Sink.Import), one wording for every store:
// each is a *parley.Error with CodeConflict naming the record.

// NameTaken: the file's user u has a name that another account, id
// other, holds in the target.
func NameTaken(u User, other string) error {
	return parley.Errorf(parley.CodeConflict, "user name %q is taken in the target by account %s; the file's account with that name is %s: rename one of them, then import again", u.Name, other, u.ID)
}

// DirectTaken: the file's direct room r has a pair that room other holds
// in the target.
func DirectTaken(r *Room, other string) error {
	return parley.Errorf(parley.CodeConflict, "room %s: the direct room of that pair (%s) is room %s in the target", r.ID, r.DirectKey, other)
}

// SameRoom checks that have, the target's room under r's id, is r: the
// same kind, pair and creation time (title, capacity and retention may
// differ: the target's stay).
func SameRoom(r, have *Room) error {
	if have.Kind != r.Kind || have.DirectKey != r.DirectKey || !have.CreatedAt.Equal(r.CreatedAt) {
		return parley.Errorf(parley.CodeConflict, "room %s exists in the target as another room (%s, created %s; the file's: %s, created %s)",
			r.ID, have.Kind, have.CreatedAt.Format("2006-01-02T15:04:05.999999Z07:00"), r.Kind, r.CreatedAt.Format("2006-01-02T15:04:05.999999Z07:00"))
	}
	return nil
}

// MessageTaken: the file's message m has a seq that message id (empty:
// another message with m's sender and client_id) holds in the target.
func MessageTaken(m *parley.Message, id string) error {
	if id == "" {
		return parley.Errorf(parley.CodeConflict, "room %s, message %d: its sender's client_id %q names another message in the target", m.RoomID, m.Seq, m.ClientID)
	}
	return parley.Errorf(parley.CodeConflict, "room %s, message %d: that seq is message %s in the target, the file's is %s", m.RoomID, m.Seq, id, m.ID)
}

// SecondOwner: the file's member m is the owner of a room that has
// another owner in the target.
func SecondOwner(m *parley.Member) error {
	return parley.Errorf(parley.CodeConflict, "room %s: member %s is its owner in the file, and the room has another owner in the target", m.RoomID, m.UserID)
}

// OverCapacity: the members of room id would be count, past its
// capacity in the target.
func OverCapacity(id string, count, capacity int) error {
	return parley.Errorf(parley.CodeConflict, "room %s: %d members with the file's, past its capacity %d in the target", id, count, capacity)
}

// KeyNameTaken: the file's API key k has a name that another key, id
// other, holds in the target.
func KeyNameTaken(k *APIKey, other string) error {
	return parley.Errorf(parley.CodeConflict, "API key name %q is taken in the target by key %s; the file's key with that name is %s", k.Name, other, k.ID)
}
