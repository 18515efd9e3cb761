package roomevents

import (
	"encoding/json"
	"strconv"
	"strings"

	"parley"
)

// KindMention is the event of a mention (design §3b): sent on the
// personal queue (/user/queue/events) of each member a message mentions,
// whether or not they subscribe to the room, never to room event
// subscriptions.
const KindMention = "mention"

// Mention takes a mention (parley.EventMention) from this node's chat
// service; ApplyRemote takes those of other nodes. It queues and returns.
func (e *Events) Mention(ev parley.Event) {
	e.enqueue(evItem{kind: itemRemote, evs: []parley.Event{ev}}, true)
}

// mention sends ev's mention event to the personal queues of its users
// on this node.
func (e *Events) mention(ev *parley.Event) {
	if !e.hasUserSubs() || len(ev.Users) == 0 {
		return
	}
	re := MentionEvent(&ev.Message)
	n := 0
	e.one[0] = re
	one := e.one[:]
	e.mu.Lock()
	for _, u := range ev.Users {
		for _, s := range e.users[u] {
			deliverLocked(s, one)
			n++
		}
	}
	e.mu.Unlock()
	e.one[0] = nil
	e.m.events.WithLabelValues(re.Kind).Inc()
	e.m.fanout.Add(float64(n))
}

// MentionEvent returns the mention event of m: headers seq, sender,
// sender-name and excerpt (the text's first parley.MaxExcerpt
// characters on one line), body the message as JSON.
func MentionEvent(m *parley.Message) *RoomEvent {
	body, _ := json.Marshal(m)
	excerpt := strings.NewReplacer("\r", " ", "\n", " ").Replace(parley.Excerpt(m.Body))
	return &RoomEvent{
		ID: parley.NewID(), Kind: KindMention, RoomID: m.RoomID, Body: body,
		Headers: [][2]string{{"seq", strconv.FormatInt(m.Seq, 10)}, {"sender", m.SenderID},
			{"sender-name", m.SenderName}, {"excerpt", excerpt}},
	}
}
