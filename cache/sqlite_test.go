package cache_test

import (
	"path/filepath"
	"sync/atomic"
	"testing"

	"parley"
	"parley/cache"
	"parley/parleytest"
	"parley/sqlite"
)

// openCachedSQLite opens a cache over a fresh SQLite store, wired the way
// cmd/parley wires them: the store's OnCommit applies the events to the
// cache, then passes them on to sink. wrap, when not nil, wraps the store the
// cache reads from.
func openCachedSQLite(t testing.TB, cfg cache.Config, sink parley.EventSink, wrap func(parley.Store) parley.Store) (*cache.Store, *sqlite.Store) {
	t.Helper()
	var c *cache.Store
	inner, err := sqlite.Open(ctx, sqlite.Config{
		Path: filepath.Join(t.TempDir(), "parley.db"),
		Sync: sqlite.SyncOff,
		OnCommit: func(events []parley.Event) {
			c.Apply(events)
			if sink != nil {
				sink(events)
			}
		},
	})
	if err != nil {
		t.Fatalf("sqlite.Open: %v", err)
	}
	var under parley.Store = inner
	if wrap != nil {
		under = wrap(inner)
	}
	c = cache.New(under, cfg)
	t.Cleanup(func() { c.Close() })
	return c, inner
}

// TestStoreConformance runs the store conformance suite against the cache
// over SQLite, with the default sizes and with a cache so small that it
// evicts all the time.
func TestStoreConformance(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  cache.Config
	}{
		{"defaults", cache.Config{}},
		{"evicting", cache.Config{RecentMessages: 3, MaxRooms: 2, MaxUsers: 2, MaxTokens: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// Count the suite's searches, and those that reached SQLite.
			var total, reached atomic.Int64
			parleytest.RunStoreTests(t, func(t *testing.T, sink parley.EventSink) parley.Store {
				var counted *countingStore
				c, _ := openCachedSQLite(t, tc.cfg, sink, func(s parley.Store) parley.Store {
					counted = &countingStore{Store: s}
					return counted
				})
				t.Cleanup(func() { reached.Add(counted.searches.Load()) })
				return &totalSearches{Store: c, n: &total}
			})
			if tc.cfg.MaxRooms != 0 {
				return // evicting: searches may go to SQLite
			}
			// With the defaults the memory index answers all but the
			// searches it cannot (a room it does not know, a bad cursor).
			if total.Load() == 0 || reached.Load() > 2 {
				t.Errorf("%d of the suite's %d searches reached SQLite, want at most 2", reached.Load(), total.Load())
			}
		})
	}
}

// TestSteadyStateSQLite checks on the real store that the room list and the
// newest page reach SQLite zero times once warm, while messages flow.
func TestSteadyStateSQLite(t *testing.T) {
	c, inner := openCachedSQLite(t, cache.Config{}, nil, nil)
	users := parleytest.MustCreateUsers(t, c, "u", 3)
	var rooms []parley.Room
	for i := range 20 {
		r := parleytest.MustCreateRoom(t, c, users[i%3], "room", 0)
		for _, u := range users {
			c.Join(ctx, r.ID, u.ID)
		}
		rooms = append(rooms, r)
	}
	readAll := func() {
		for _, u := range users {
			if list, _, err := c.Rooms(ctx, u.ID, "", 50); err != nil || len(list) != len(rooms) {
				t.Fatalf("Rooms(%s) = %d entries, %v; want %d", u.Name, len(list), err, len(rooms))
			}
		}
		for _, r := range rooms {
			if _, err := c.Messages(ctx, r.ID, parley.Newest(50)); err != nil {
				t.Fatalf("Messages(%s): %v", r.ID, err)
			}
		}
	}
	readAll() // warm-up
	for i := range 200 {
		parleytest.MustSend(t, c, rooms[i%len(rooms)], users[i%3], "hello")
		before := inner.Reads()
		readAll()
		if n := inner.Reads() - before; n != 0 {
			t.Fatalf("after send %d: the room list and newest pages sent %d queries to SQLite, want 0", i, n)
		}
	}
}
