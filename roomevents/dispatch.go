package roomevents

// The intake and the dispatch goroutine: Apply, ApplyRemote and the
// signals only queue work (enqueue); run takes it in order and commit
// maps each committed change to its event, fanned out by toRoom.

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"parley"
)

// evItem is one unit of work for the dispatch goroutine.
type evItem struct {
	kind   int
	evs    []parley.Event // itemCommits, itemRemote
	room   string         // itemTyping, itemFlush
	user   string         // itemTyping, itemPresence, itemCheck
	remote bool           // itemTyping: from another node
	gen    uint64         // itemCheck: the timer's generation
}

const (
	itemCommits = iota + 1
	itemRemote
	itemTyping
	itemPresence
	itemFlush
	itemCheck
	itemTypingFlush
)

// Apply takes this node's committed events (a parley.EventSink): it never
// blocks and keeps nothing of evs but copies. What can make no event is
// left out here, so that the messages of a big room (every one moves its
// sender's read position) neither wake the dispatcher on each commit nor
// fill its queue.
func (e *Events) Apply(evs []parley.Event) {
	var keep []parley.Event
	for i := range evs {
		if eventKind(evs[i].Kind) && !e.noReadEvents(&evs[i]) {
			keep = append(keep, evs[i])
		}
	}
	if len(keep) > 0 {
		e.enqueue(evItem{kind: itemCommits, evs: keep}, true)
	}
}

// ApplyRemote takes an event another node committed or signalled, as the
// cluster relay receives it: joins, leaves, role and room changes, typing
// and the read positions that node coalesced.
func (e *Events) ApplyRemote(ev parley.Event) {
	if ev.Kind == parley.EventTyping {
		if e.letTyping(ev.Room.ID, ev.UserID) {
			e.enqueue(evItem{kind: itemTyping, room: ev.Room.ID, user: ev.UserID, remote: true}, true)
		}
		return
	}
	if eventKind(ev.Kind) {
		e.enqueue(evItem{kind: itemRemote, evs: []parley.Event{ev}}, true)
	}
}

// eventKind reports whether committed events of kind k may make room
// events: every kind but a room's creation (its members join with
// EventJoin); Events.commit decides.
func eventKind(k parley.EventKind) bool {
	return k != parley.EventRoom
}

// noReadEvents reports whether ev is a read position, or a message (which
// moves its sender's), of a room too big for read events: Events.commit
// would pass it to read, which drops it for the same member count.
func (e *Events) noReadEvents(ev *parley.Event) bool {
	switch ev.Kind {
	case parley.EventMessage, parley.EventRead, parley.EventReads:
		return ev.Room.MemberCount > e.cfg.ReadMaxMembers
	}
	return false
}

// enqueue queues it; bounded items past MaxQueue are dropped and the
// overflow marked. Timer items are never dropped (they are bounded by the
// rooms and users with state).
func (e *Events) enqueue(it evItem, bounded bool) {
	e.qmu.Lock()
	if e.closing {
		e.qmu.Unlock()
		return
	}
	if it.kind == itemPresence && e.queued[it.user] {
		e.heard(it.user)
		e.qmu.Unlock() // the queued change restarts the quiet period for both
		return
	}
	if bounded && len(e.queue) >= e.cfg.MaxQueue {
		e.overflow = true
		e.qmu.Unlock()
		e.m.dropped.Inc()
		return
	}
	if it.kind == itemPresence {
		e.queued[it.user] = true
		e.heard(it.user)
	}
	e.queue = append(e.queue, it)
	select { // under qmu: Close closes wake under it
	case e.wake <- struct{}{}:
	default:
	}
	e.qmu.Unlock()
}

func (e *Events) run() {
	defer close(e.done)
	for {
		e.qmu.Lock()
		batch := e.queue
		e.queue = e.spare[:0]
		clear(e.queued)
		overflow := e.overflow
		e.overflow = false
		closing := e.closing
		e.qmu.Unlock()
		if overflow {
			e.dropAll()
		}
		for i := range batch {
			e.handle(&batch[i])
		}
		clear(batch)
		e.spare = batch
		if len(batch) > 0 {
			continue
		}
		if closing {
			for _, p := range e.presence {
				if p.stop != nil {
					p.stop()
				}
			}
			return
		}
		<-e.wake
	}
}

func (e *Events) handle(it *evItem) {
	switch it.kind {
	case itemCommits:
		for i := range it.evs {
			e.commit(&it.evs[i], false)
		}
	case itemRemote:
		for i := range it.evs {
			e.commit(&it.evs[i], true)
		}
	case itemTyping:
		e.typing(it.room, it.user, it.remote)
	case itemPresence:
		e.presenceChanged(it.user)
	case itemFlush:
		e.flushReads(it.room)
	case itemCheck:
		e.checkPresence(it.user, it.gen)
	case itemTypingFlush:
		e.flushTyping(it.room)
	}
}

// commit turns one committed event (or a remote node's coalesced reads)
// into room events: the one place that maps a parley.EventKind to an event.
func (e *Events) commit(ev *parley.Event, remote bool) {
	room := ev.Room.ID
	switch ev.Kind {
	case parley.EventJoin:
		e.member(ev, ActionJoined, ev.UserID, "")
	case parley.EventLeave:
		action := ActionLeft
		switch ev.Reason {
		case parley.LeaveRemoved:
			action = ActionRemoved
		case parley.LeaveBanned:
			action = ActionBanned
		}
		e.leave(room, ev.UserID, ev.Reason)
		e.member(ev, action, ev.UserID, ev.UserID)
	case parley.EventRole:
		e.member(ev, ActionRole, ev.UserID, "")
	case parley.EventRoomInfo:
		e.member(ev, ActionRoom, ev.ActorID, "")
	case parley.EventUnban:
		e.member(ev, ActionUnban, ev.UserID, "")
	case parley.EventRead:
		e.read(room, ev.Room.MemberCount, []parley.Read{{UserID: ev.UserID, Seq: ev.ReadSeq}}, !remote)
	case parley.EventMessage:
		// The sender's read position moves to its own message. Every node
		// sees the message (its own commit, or the relay's batch), so this
		// read is never forwarded: it costs no publish.
		e.read(room, ev.Room.MemberCount, []parley.Read{{UserID: ev.Message.SenderID, Seq: ev.Message.Seq}}, false)
	case parley.EventReads:
		e.read(room, ev.Room.MemberCount, ev.Reads, false)
	case parley.EventEdited, parley.EventDeleted:
		if e.hasSubs() {
			e.toRoom(ChangeEvent(&ev.Message), "", "")
		}
	case parley.EventReaction:
		if e.hasSubs() {
			e.toRoom(ReactionEvent(ev), "", "")
		}
	case parley.EventThread:
		if e.hasSubs() {
			e.toRoom(ThreadEvent(ev), "", "")
		}
	case parley.EventPin:
		if e.hasSubs() {
			e.toRoom(PinEvent(ev), "", "")
		}
	case parley.EventMention:
		e.mention(ev)
	}
}

// member sends a member event: action on user, with the room's new info
// as the body. also, when set, is a user who gets it on the personal queue
// though no longer a member (the one who left or was removed).
func (e *Events) member(ev *parley.Event, action, user, also string) {
	if !e.hasSubs() {
		return
	}
	body, _ := json.Marshal(ev.Room)
	h := [][2]string{{"user", user}, {"action", action}}
	if ev.Kind == parley.EventRole {
		h = append(h, [2]string{"role", ev.Role})
	}
	if ev.ActorID != "" {
		h = append(h, [2]string{"actor", ev.ActorID})
	}
	re := &RoomEvent{ID: parley.NewID(), Kind: KindMember, RoomID: ev.Room.ID, Headers: h, Body: body}
	e.toRoom(re, "", also)
}

// toRoom hands re to the event subscribers of its room and to the
// personal event queues of the room's members (and of also), but those of
// except.
func (e *Events) toRoom(re *RoomEvent, except, also string) {
	var members []string
	if e.hasUserSubs() {
		var err error
		if members, err = e.members(re.RoomID); err != nil {
			return
		}
		if also != "" {
			members = append(slices.Clip(members), also)
		}
	}
	e.toMembers(re, members, except)
}

// toMembers hands re to the event subscribers of its room and to the
// personal event queues of members, but those of except.
func (e *Events) toMembers(re *RoomEvent, members []string, except string) {
	n := 0
	e.one[0] = re
	one := e.one[:]
	e.mu.Lock()
	for _, s := range e.rooms[re.RoomID] {
		if s.UserID != except {
			deliverLocked(s, one)
			n++
		}
	}
	for _, u := range members {
		if u == except {
			continue
		}
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

func (e *Events) members(roomID string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	ids, err := e.cfg.Rooms.Members(ctx, roomID)
	if err != nil && parley.ErrorCode(err) != parley.CodeNotFound {
		e.log.Error("events: members of room", "room", roomID, "err", err)
		e.m.lookupErrors.Inc()
	}
	return ids, err
}

// leave drops userID's event subscriptions to the room: silently for a
// plain leave (as the Hub drops its topic subscriptions), with Evicted
// for a removal or a ban.
func (e *Events) leave(roomID, userID, reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	subs := e.rooms[roomID]
	for i := 0; i < len(subs); {
		s := subs[i]
		if s.UserID != userID {
			i++
			continue
		}
		e.removeLocked(s)
		s.removed.Store(true)
		if reason != parley.LeaveLeft {
			s.To.Evicted(roomID, reason)
		}
		subs = e.rooms[roomID]
	}
}
