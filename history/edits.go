package history

import (
	"container/list"

	"parley"
)

// Apply forgets the blocks that hold a message an edit or a deletion
// changed (EventEdited, EventDeleted), so that the next page of them is
// read again from the inner store; other events change nothing here. A
// block read from a snapshot taken before such a change is not kept (the
// change count moves, see block). Install it as a commit callback on one
// node, and hand it the changes other nodes relay in cluster mode
// (cluster.Config.ApplyChanges): blocks are per node. It takes Store.mu.
func (s *Store) Apply(events []parley.Event) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range events {
		ev := &events[i]
		if !ev.Kind.ChangesMessage() {
			continue
		}
		s.changes++
		if ev.Message.Thread != nil && (ev.Kind == parley.EventEdited || ev.Kind == parley.EventDeleted) {
			// The root's replies, in any block, show an excerpt of its
			// text: forget every block of the room (rare: a thread's root
			// edited or deleted).
			for key, e := range s.blocks {
				if key.room == ev.Message.RoomID {
					s.forgetLocked(key, e)
				}
			}
			continue
		}
		key := blockKey{ev.Message.RoomID, s.blockOf(ev.Message.Seq)}
		if e, ok := s.blocks[key]; ok {
			s.forgetLocked(key, e)
		}
	}
}

// forgetLocked drops a block. s.mu is held.
func (s *Store) forgetLocked(key blockKey, e *list.Element) {
	b := s.lru.Remove(e).(*block)
	delete(s.blocks, key)
	s.bytes -= b.bytes
}
