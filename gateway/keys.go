package gateway

import (
	"strings"

	"parley"
	"parley/stomp"
)

// API keys over STOMP (chat/apikeys.go): a bot signs in with its key as
// the passcode (or Authorization: Bearer pk_…), and the key's scopes
// decide its frames: SUBSCRIBE needs "history" (every destination reads
// messages or their events), SEND needs "post" (messages, changes and
// typing alike). A room-bound key (an incoming webhook's) may name its
// room only. A frame the key may not send is an ERROR forbidden.

// keyRefusal is the refusal of f for a session signed in with key, nil
// when key allows it (or there is no key: a person's session).
func keyRefusal(key *parley.APIKey, f *stomp.Frame) error {
	if key == nil {
		return nil
	}
	var scope string
	switch f.Command {
	case stomp.Subscribe:
		scope = parley.ScopeHistory
	case stomp.Send:
		scope = parley.ScopePost
	default:
		return nil
	}
	if !key.Allows(scope) {
		return parley.Errorf(parley.CodeForbidden, "the API key %q lacks the scope %q for %v", key.Name, scope, f.Command)
	}
	if key.RoomID != "" && destRoom(string(f.Get("destination"))) != key.RoomID {
		return parley.Errorf(parley.CodeForbidden, "the API key %q acts in room %s only", key.Name, key.RoomID)
	}
	return nil
}

// destRoom is the room a destination names ("" for none: the user's
// queues).
func destRoom(dest string) string {
	for _, p := range []string{appPrefix, topicPrefix} {
		if id, ok := strings.CutPrefix(dest, p); ok {
			id, _ = strings.CutSuffix(id, eventsSuffix)
			id, _, _ = strings.Cut(id, ".") // /app/rooms.{id}.typing
			return id
		}
	}
	return ""
}
