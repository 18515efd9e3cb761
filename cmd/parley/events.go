package main

import (
	"context"

	"parley"
	"parley/roomevents"
)

// Room events (design §4): roomevents.Events fans them out to this node's event
// subscriptions. It hears this node's commits (the last commit callback),
// the gateway's typing signals, and presence changes: from the gateway on
// one node (its first and last session of each user), from Redis in
// cluster mode (every node's). In cluster mode the relay carries typing
// and coalesced reads to the room's other nodes (Relay.Signal) and hands
// what other nodes send to ApplyRemote.

// openEvents makes m.events; it is called after the hub and before the
// cluster, and reads m.gateway and m.cluster lazily (they are set before
// the listeners start, and only a listener can cause an event).
func (m *Main) openEvents(clustered bool, reads parley.Store) {
	cfg := roomevents.Config{Rooms: reads, Seen: seenOf{m}, TypingMaxMembers: m.Config.TypingMaxMembers, Registerer: m.registry}
	if clustered {
		cfg.OnTyping = func(roomID, userID string) {
			m.cluster.relay.Signal(parley.Event{Kind: parley.EventTyping, Room: parley.Room{ID: roomID}, UserID: userID})
		}
		cfg.OnReads = func(roomID string, reads []parley.Read) {
			m.cluster.relay.Signal(parley.Event{Kind: parley.EventReads, Room: parley.Room{ID: roomID}, Reads: reads})
		}
	}
	m.events = roomevents.New(cfg)
}

// Seen is who is online and when they were last seen (chat.Seen): the
// gateway's user registry on one node, Redis presence in cluster mode.
func (m *Main) Seen(ctx context.Context, userIDs []string) (map[string]parley.Seen, error) {
	if m.cluster != nil {
		return m.cluster.presence.Seen(ctx, userIDs)
	}
	return m.gateway.Seen(ctx, userIDs)
}

// shownSeen is the member listing's presence (chat.Config.Seen): the
// node's Seen as the room events have announced it (roomevents.Events.Seen), so
// that a user in a presence quiet period is listed as the last online or
// offline event said. It reads m.events lazily (the chat service is made
// before it; only a listener can ask).
type shownSeen struct{ m *Main }

func (s shownSeen) Seen(ctx context.Context, userIDs []string) (map[string]parley.Seen, error) {
	return s.m.events.Seen(ctx, userIDs)
}

// seenOf is the node's Seen as roomevents.Events's lookup.
type seenOf struct{ m *Main }

func (s seenOf) Seen(ctx context.Context, userIDs []string) (map[string]parley.Seen, error) {
	return s.m.Seen(ctx, userIDs)
}
