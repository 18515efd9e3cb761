package history

import (
	"container/list"
	"context"

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
			for _, e := range s.rooms[ev.Message.RoomID] {
				s.forgetLocked(e.Value.(*block).key, e)
			}
			continue
		}
		key := blockKey{ev.Message.RoomID, s.blockOf(ev.Message.Seq)}
		if e, ok := s.blocks[key]; ok {
			s.forgetLocked(key, e)
		}
		if !s.shared {
			continue // the marks are read by fresh only
		}
		// The room's other blocks have this change too (it did not touch
		// them): those that had every one before it are marked with it.
		for _, e := range s.rooms[key.room] {
			if b := e.Value.(*block); b.change == ev.Message.Change-1 {
				b.change = ev.Message.Change
			}
		}
	}
}

// forgetLocked drops a block. s.mu is held.
func (s *Store) forgetLocked(key blockKey, e *list.Element) {
	b := s.lru.Remove(e).(*block)
	delete(s.blocks, key)
	if byIndex := s.rooms[key.room]; byIndex != nil {
		delete(byIndex, key.index)
		if len(byIndex) == 0 {
			delete(s.rooms, key.room)
		}
	}
	s.bytes -= b.bytes
}

// fresh brings the cached blocks of a room up to change last, its
// LastChange just read (Config.Shared). A node's blocks follow the changes
// that reach Apply, but another node's relay of a change may never come
// (it died between its commit and its publish, or the broker lost the
// batch), so a Shared store trusts the room's number, not the relay: a
// block marked below last is kept, marked last, if none of the room's
// changes since its mark touched it (one Changed query, from the lowest
// mark), and forgotten otherwise, or when the query fails or fills a page.
// A change touches its message's block, and, for a thread root's edit or
// deletion, every block (its replies show its excerpt). Reactions and
// relayed changes make most checks cheap: Apply moves the marks of the
// blocks a change did not touch.
func (s *Store) fresh(ctx context.Context, roomID string, last int64) {
	s.mu.Lock()
	var stale []*block
	from := last
	for _, e := range s.rooms[roomID] {
		if b := e.Value.(*block); b.change < last {
			stale = append(stale, b)
			from = min(from, b.change)
		}
	}
	s.mu.Unlock()
	if len(stale) == 0 {
		return
	}
	changed, err := s.Store.Changed(ctx, roomID, from, parley.MaxPageLimit)
	all := err != nil || len(changed) >= parley.MaxPageLimit
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range stale {
		e, ok := s.blocks[b.key]
		if !ok || e.Value.(*block) != b { // forgotten, or loaded again, meanwhile
			continue
		}
		if all || s.touched(b, changed) {
			s.forgetLocked(b.key, e)
			continue
		}
		b.change = max(b.change, last)
	}
}

// touched reports whether one of changed, newer than b's mark, touched b.
func (s *Store) touched(b *block, changed []parley.Message) bool {
	for i := range changed {
		m := &changed[i]
		if m.Change <= b.change {
			continue
		}
		if s.blockOf(m.Seq) == b.key.index || m.Thread != nil && (m.EditedAt != nil || m.DeletedAt != nil) {
			return true
		}
	}
	return false
}
