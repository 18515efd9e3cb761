package cache

import (
	"fmt"
	"slices"

	"parley"
)

// SearchBytesUsed is the indexes' estimate of their heap (what
// Config.SearchBytes bounds), for the memory benchmark.
func SearchBytesUsed(s *Store) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	for st := range s.search.rooms {
		st.idx.flush()
		s.search.count(st.idx)
	}
	return s.search.total()
}

// DropSearchIndexes drops every room's search index.
func DropSearchIndexes(s *Store) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.search.reset()
}

// SearchDictWords is the number of words in the store's dictionary.
func SearchDictWords(s *Store) int { return s.search.dict.size() }

// CheckSearchIndexes checks the indexes against their messages and the
// dictionary against the indexes: every word of a live message is filed
// under its seq and nothing else is; the dictionary holds exactly the
// words some index refers to, each with one reference per index, and its
// byte count is theirs. No build may run meanwhile.
func CheckSearchIndexes(s *Store) error {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for st := range s.search.rooms {
		st.idx.flush()
	}
	d := &s.search.dict
	d.mu.RLock()
	defer d.mu.RUnlock()
	refs := map[uint32]int32{}
	for st := range s.search.rooms {
		ix := st.idx
		want := map[string][]uint32{}
		var buf []byte
		for seq := uint32(1); int(seq) <= len(ix.recs); seq++ {
			m := ix.message(seq)
			if m.Seq != int64(seq) || m.RoomID != st.room.ID && st.hasRoom {
				return fmt.Errorf("room %s seq %d: message %+v", st.room.ID, seq, m)
			}
			if m.Deleted() {
				continue
			}
			buf = parley.EachWord(m.Body, buf, func(w []byte) {
				if p := want[string(w)]; len(p) == 0 || p[len(p)-1] != seq {
					want[string(w)] = append(p, seq)
				}
			})
		}
		if len(want) != len(ix.terms) {
			return fmt.Errorf("room %s: %d words filed, want %d", st.room.ID, len(ix.terms), len(want))
		}
		for id := range ix.terms {
			refs[id]++
			if int(id) >= len(d.words) || d.words[id].refs == 0 {
				return fmt.Errorf("room %s: word id %d not in the dictionary", st.room.ID, id)
			}
			w := d.words[id].word
			if got := ix.postings(id); !slices.Equal(got, want[w]) {
				return fmt.Errorf("room %s: %q filed under %v, want %v", st.room.ID, w, got, want[w])
			}
		}
	}
	var bytes int64
	live := 0
	for id, e := range d.words {
		if e.refs != refs[uint32(id)] {
			return fmt.Errorf("word %q (id %d) has %d references, the indexes hold %d", e.word, id, e.refs, refs[uint32(id)])
		}
		if e.refs > 0 {
			live++
			bytes += dictWordSize + int64(len(e.word))
			if got, ok := d.ids[e.word]; !ok || got != uint32(id) {
				return fmt.Errorf("word %q (id %d) maps to %d, %v", e.word, id, got, ok)
			}
		}
	}
	if live != len(d.ids) || bytes != d.bytes.Load() {
		return fmt.Errorf("dictionary: %d words and %d bytes, want %d and %d", len(d.ids), d.bytes.Load(), live, bytes)
	}
	return nil
}
