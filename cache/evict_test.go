package cache

import (
	"context"
	"fmt"
	"testing"
	"time"

	"parley"
)

// TestEvictionBounds checks that the maps stay within their caps however
// many keys pass through, and that a key being loaded is never evicted.
func TestEvictionBounds(t *testing.T) {
	s := New(nil, Config{MaxRooms: 3, MaxUsers: 4, MaxTokens: 5})
	busy := s.roomLocked("busy")
	busy.backlog.begin()
	for i := range 100 {
		id := fmt.Sprint("room", i)
		s.Apply([]parley.Event{{Kind: parley.EventRoom, Room: parley.Room{ID: id}}})
		s.userLocked(fmt.Sprint("user", i))
		s.tokens[id] = &tokenState{}
		evictLocked(s.tokens, s.maxTokens)
		if len(s.rooms) > 3 || len(s.users) > 4 || len(s.tokens) > 5 {
			t.Fatalf("after %d keys: %d rooms, %d users, %d tokens; want at most 3, 4, 5", i+1, len(s.rooms), len(s.users), len(s.tokens))
		}
		if s.rooms["busy"] != busy {
			t.Fatalf("after %d keys: a room with a load in flight was evicted", i+1)
		}
	}
}

// TestEvictionSecondChance checks that a key read since the last sweep
// outlives one that was not.
func TestEvictionSecondChance(t *testing.T) {
	s := New(nil, Config{MaxRooms: 2})
	s.Apply([]parley.Event{{Kind: parley.EventRoom, Room: parley.Room{ID: "hot"}}, {Kind: parley.EventRoom, Room: parley.Room{ID: "cold"}}})
	s.rooms["cold"].used.Store(false)
	s.rooms["hot"].used.Store(false)
	if _, err := s.Room(context.Background(), "hot"); err != nil {
		t.Fatal(err)
	}
	s.Apply([]parley.Event{{Kind: parley.EventRoom, Room: parley.Room{ID: "new", LastActivityAt: time.Now()}}})
	if s.rooms["hot"] == nil || s.rooms["cold"] != nil || s.rooms["new"] == nil {
		t.Errorf("rooms after eviction: hot %v, cold %v, new %v; want hot and new", s.rooms["hot"] != nil, s.rooms["cold"] != nil, s.rooms["new"] != nil)
	}
}
