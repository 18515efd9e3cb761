package main

import (
	goredis "github.com/redis/go-redis/v9"

	"parley"
	"parley/chat"
)

// Mentions (design §3b): the chat service resolves them and, after the
// commit, hands the mention to onMention, which gives it to this node's
// room events and, in cluster mode, to the relay, which sends it to the
// other nodes of the room's route as it sends typing (a signal); there
// the relay hands it to the room events too. It reads m.events and
// m.cluster lazily (set before the listeners start; only a listener can
// cause a send).
func (m *Main) onMention(ev parley.Event) {
	m.events.Mention(ev)
	if m.cluster != nil {
		m.cluster.relay.Signal(ev)
	}
}

// roomMentionLimit is @room's limit per user per room: on one node, or
// over the cluster in Redis.
func (m *Main) roomMentionLimit(clustered bool, rdb *goredis.Client) chat.Limiter {
	if clustered && rdb != nil {
		return shared(rdb, m.Config.RedisPrefix, "room-mention", 1/chat.RoomMentionEvery.Seconds(), chat.RoomMentionBurst)
	}
	return chat.NewRoomMentionLimit()
}
