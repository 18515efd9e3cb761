package cache

import "parley"

// Apply updates the cache with committed events, in commit order. Install it
// as the inner store's OnCommit sink: the inner store calls it on its writer
// after each commit and before the writes return, so it only takes the cache
// lock and never calls the inner store.
//
// Every event sets its room's info (inserting the room if it is not
// cached). EventRoom also starts the room's member set and window empty;
// joins and leaves update the member set and the user's memberships, reads
// the user's read position, and messages the room's window and the sender's
// read position. Parts that are not cached are left alone, except that the
// event is kept for the loads in flight on its room or user.
func (s *Store) Apply(events []parley.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range events {
		s.applyLocked(&events[i])
	}
}

func (s *Store) applyLocked(ev *parley.Event) {
	st := s.roomLocked(ev.Room.ID)
	st.room, st.hasRoom = ev.Room, true
	st.ver++
	st.backlog.add(ev)
	if ev.Kind == parley.EventRoom {
		st.idsOK = true
		st.list, st.listOK = map[string]*listed{}, true
	}
	if st.idsOK {
		st.ids = membersAfter(st.ids, ev)
	}
	if st.listOK {
		listAfter(st.list, ev)
	}
	old := mentionsBefore(st, ev)
	st.win.apply(ev, s.recent)
	s.applySearchLocked(st, ev)

	if ev.UserID != "" {
		if u := s.users[ev.UserID]; u != nil {
			u.backlog.add(ev)
			if u.membersOK {
				if memberAfter(u.members, ev) {
					u.gen++
					if m := u.members[ev.Room.ID]; m != nil {
						joinedLocked(st, ev, m)
					}
				}
				u.readVer++
			}
		}
	}
	s.applyMentionsLocked(st, ev, old)
}
