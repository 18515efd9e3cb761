package cache

import (
	"context"
	"slices"

	"parley"
)

// Mention counts and notification levels (parley.RoomEntry's Mentions
// and Notifications) are kept with each membership (member.mentions,
// member.level), so that the room list serves them from memory like the
// unread count. A member's state is known (member.notifyOK, at the
// room's mentionEpoch) once loaded with the list from the inner store
// (loadNotify) or started by its join, and Apply keeps it exact from
// then on:
//   - a message that mentions the member, or @room, above their read
//     position adds one (none at level none);
//   - a read, and the member's own message, which moves their read
//     position, count again what is left above it from the room's window
//     of recent messages (or make the state unknown, loaded again by the
//     next room list, when the window does not reach down to the read
//     position and mentions were left);
//   - an edit or a deletion takes the message's old version from the
//     window and counts the difference for every member it or the new
//     version names (the old version out of the window: a new epoch);
//   - SetNotifyLevel sets the level once the inner store has it: at
//     once on this node, the only one (the cache is kept current by this
//     node's commits only; a cluster's room list is redis.HotStore's).
//
// Finding the members of a room that a message for @room (or a changed
// message) concerns takes the room's member ids; when they are not
// cached, or an edit or deletion's old version is not in the window, the
// room takes a new epoch (roomState.mentionEpoch) instead, which makes
// the state of each of its members unknown at once (a retention pass's
// deletions of old messages cost no walk of the members).

// SetNotifyLevel sets the level in the inner store, then in the cached
// membership.
func (s *Store) SetNotifyLevel(ctx context.Context, roomID, userID, level string) error {
	if err := s.inner.SetNotifyLevel(ctx, roomID, userID, level); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	u := s.users[userID]
	if u == nil {
		return nil
	}
	u.notifyGen++ // a load in flight may have read the level before
	if !u.membersOK {
		return nil
	}
	m, st := u.members[roomID], s.rooms[roomID]
	if m == nil || st == nil || !known(st, m) {
		return nil // loaded with the level by the next room list
	}
	was := m.level
	m.level = entryLevel(level)
	switch {
	case m.level == parley.NotifyNone:
		m.mentions = 0
	case was == parley.NotifyNone:
		s.recountLocked(st, userID, m, false)
	}
	u.readVer++
	return nil
}

// NotifyStates passes through to the inner store.
func (s *Store) NotifyStates(ctx context.Context, userID string) (map[string]parley.RoomNotify, error) {
	return s.inner.NotifyStates(ctx, userID)
}

// NotifyLevels passes through to the inner store: it is read only for a
// message that mentions someone.
func (s *Store) NotifyLevels(ctx context.Context, roomID string, userIDs []string) (map[string]string, error) {
	return s.inner.NotifyLevels(ctx, roomID, userIDs)
}

// entryLevel is a level as a RoomEntry has it: NotifyAll for "".
func entryLevel(level string) string {
	if level == "" {
		return parley.NotifyAll
	}
	return level
}

// mentionsUser reports whether m, a message's current version, counts as
// a mention of userID.
func mentionsUser(m *parley.Message, userID string) bool {
	return m.Mentions != "" && !m.Deleted() && (m.Mentions.Room() || m.Mentions.Has(userID))
}

// recountLocked counts m's unread mentions again, from the window of st,
// after its read position moved (read) or its level left none; when the
// window does not reach down to the read position, the state becomes
// unknown, unless a read moved it from zero (a read only lowers it). s.mu
// is held.
func (s *Store) recountLocked(st *roomState, userID string, m *member, read bool) {
	if !known(st, m) {
		return
	}
	if m.level == parley.NotifyNone {
		m.mentions = 0
		return
	}
	if !st.hasRoom {
		m.notifyOK = read && m.mentions == 0
		return
	}
	last := st.room.LastSeq
	if m.readSeq >= last {
		m.mentions = 0
		m.through = max(m.through, last)
		return
	}
	if !st.win.covers(m.readSeq+1, last) {
		m.notifyOK = read && m.mentions == 0
		return
	}
	var n int64
	for seq := m.readSeq + 1; seq <= last; seq++ {
		if mentionsUser(st.win.at(seq), userID) {
			n++
		}
	}
	// The window's versions from now on: a change it holds already
	// finds no older version (mentionsBefore), one it does not is
	// counted from the version it holds.
	m.mentions, m.through, m.change = n, max(m.through, last), 0
}

// known reports whether m's mention state is known: loaded or kept at the
// room's current epoch.
func known(st *roomState, m *member) bool { return m.notifyOK && m.epoch == st.mentionEpoch }

// newEpochLocked makes the mention state of every member of st unknown.
func (s *Store) newEpochLocked(st *roomState) {
	s.epochs++
	st.mentionEpoch = s.epochs
}

// roomMembersLocked calls f with each cached user who is a member of the
// room and whose mention state is known, or, when the room's member ids
// are not cached, starts a new epoch (f is not called). s.mu is held for
// writing.
func (s *Store) roomMembersLocked(st *roomState, roomID string, f func(userID string, u *userState, m *member)) {
	if !st.idsOK {
		s.newEpochLocked(st)
		return
	}
	for _, id := range st.ids {
		if u := s.users[id]; u != nil && u.membersOK {
			if m := u.members[roomID]; m != nil && known(st, m) {
				f(id, u, m)
			}
		}
	}
}

// mentionsBefore returns the version of an edited or deleted message that
// the window holds before ev is applied, nil when it holds none or ev is
// not such a change. s.mu is held.
func mentionsBefore(st *roomState, ev *parley.Event) *parley.Message {
	if ev.Kind != parley.EventEdited && ev.Kind != parley.EventDeleted {
		return nil
	}
	seq := ev.Message.Seq
	if !st.win.covers(seq, seq) {
		return nil
	}
	if old := st.win.at(seq); old.Change < ev.Message.Change { // else a load saw ev already: unknown
		return old // a slot is never written again (window)
	}
	return nil
}

// applyMentionsLocked updates the cached mention states for ev, applied
// already to the room st and its members; old is the message's version
// before an edit or deletion (mentionsBefore), nil when unknown. s.mu is
// held for writing.
func (s *Store) applyMentionsLocked(st *roomState, ev *parley.Event, old *parley.Message) {
	roomID := ev.Room.ID
	switch ev.Kind {
	case parley.EventMessage:
		msg := &ev.Message
		if u := s.users[ev.UserID]; u != nil && u.membersOK { // the sender read up to it
			if m := u.members[roomID]; m != nil {
				s.recountLocked(st, ev.UserID, m, true)
			}
		}
		if msg.Mentions == "" {
			return
		}
		add := func(id string, u *userState, m *member) {
			if msg.Seq <= m.through {
				return // counted already (loaded, or the window's)
			}
			m.through = msg.Seq
			if id != msg.SenderID && m.level != parley.NotifyNone && msg.Seq > m.readSeq && mentionsUser(msg, id) {
				m.mentions++
				u.readVer++
			}
		}
		if msg.Mentions.Room() {
			s.roomMembersLocked(st, roomID, add)
			return
		}
		ids := msg.Mentions.IDs()
		for i, id := range ids {
			if slices.Contains(ids[:i], id) {
				continue // named twice, counted once
			}
			if u := s.users[id]; u != nil && u.membersOK {
				if m := u.members[roomID]; m != nil && known(st, m) {
					add(id, u, m)
				}
			}
		}
	case parley.EventEdited, parley.EventDeleted:
		msg := &ev.Message
		switch {
		case old == nil:
			s.newEpochLocked(st)
			return
		case old.Mentions == "" && msg.Mentions == "":
			return
		}
		s.roomMembersLocked(st, roomID, func(id string, u *userState, m *member) {
			if ev.Room.LastChange <= m.change || msg.Seq <= m.readSeq || m.level == parley.NotifyNone {
				return // counted already (loaded), read, or not counted
			}
			had, has := mentionsUser(old, id), mentionsUser(msg, id)
			if had != has {
				if has {
					m.mentions++
				} else {
					m.mentions--
				}
				u.readVer++
			}
		})
	case parley.EventRead:
		if u := s.users[ev.UserID]; u != nil && u.membersOK {
			if m := u.members[roomID]; m != nil {
				s.recountLocked(st, ev.UserID, m, true)
			}
		}
	}
}

// joinedLocked starts the mention state of m, a membership ev (a join)
// just added: at the default level, with the unread mentions below the
// room's head if the join left any (known when the window holds them).
func joinedLocked(st *roomState, ev *parley.Event, m *member) {
	m.level, m.mentions, m.epoch = parley.NotifyAll, 0, st.mentionEpoch
	last := st.room.LastSeq
	m.through, m.change = last, 0
	switch {
	case m.readSeq >= last:
		m.notifyOK = true
	case st.win.covers(m.readSeq+1, last):
		for seq := m.readSeq + 1; seq <= last; seq++ {
			if mentionsUser(st.win.at(seq), ev.UserID) {
				m.mentions++
			}
		}
		m.notifyOK = true
	}
}

// loadNotify loads the mention states of the user's memberships that are
// not known, from the inner store's room list, each installed only when
// the cache's room (last seq, last change) is what the list was read at
// (so every event applied is in the list: the cache's room is never older
// than Apply made it) and its read position too. The events of commits
// the list saw and Apply has not yet are not counted again: the member
// keeps the last seq and change the list counted (through, change).
func (s *Store) loadNotify(ctx context.Context, userID string) error {
	s.mu.RLock()
	u := s.users[userID]
	if u == nil {
		s.mu.RUnlock()
		return nil
	}
	gen, notifyGen := u.gen, u.notifyGen
	s.mu.RUnlock()

	var all []parley.RoomEntry
	cursor := ""
	for {
		es, next, err := s.inner.Rooms(ctx, userID, cursor, parley.MaxPageLimit)
		if err != nil {
			return err
		}
		all = append(all, es...)
		if next == "" {
			break
		}
		cursor = next
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users[userID] != u || !u.membersOK || u.gen != gen || u.notifyGen != notifyGen {
		return nil
	}
	for i := range all {
		e := &all[i]
		m, st := u.members[e.Room.ID], s.rooms[e.Room.ID]
		if m == nil || st == nil || known(st, m) || !st.hasRoom ||
			st.room.LastSeq != e.Room.LastSeq || st.room.LastChange != e.Room.LastChange {
			continue
		}
		if read := e.Room.LastSeq - e.Unread; e.Unread > 0 && m.readSeq != read || e.Unread == 0 && m.readSeq < e.Room.LastSeq {
			continue // a read the list saw and Apply has not, or the reverse
		}
		m.level, m.mentions, m.notifyOK, m.epoch = entryLevel(e.Notifications), e.Mentions, true, st.mentionEpoch
		m.through, m.change = e.Room.LastSeq, e.Room.LastChange
		u.readVer++
	}
	return nil
}
