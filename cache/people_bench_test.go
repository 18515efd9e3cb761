package cache_test

import (
	"testing"

	"parley"
	"parley/cache"
	"parley/parleytest"
)

// BenchmarkRoomMembers reads the member listing of a room of 1,000
// members from the cache (memory) and straight from the SQLite store under
// it, in the same run: the ratio is what the cache saves a members
// request. store-reads/op counts the cache's reads of SQLite.
//
//	go test -run '^$' -bench BenchmarkRoomMembers -benchtime 2000x ./cache
func BenchmarkRoomMembers(b *testing.B) {
	var cnt *counting
	c, inner := openCachedSQLite(b, cache.Config{}, nil, func(s parley.Store) parley.Store {
		cnt = newCounting(s)
		return cnt
	})
	us := parleytest.MustCreateUsers(b, c, "user", 1000)
	room := parleytest.MustCreateRoom(b, c, us[0], "big", 0)
	for _, u := range us[1:] {
		parleytest.MustJoin(b, c, room, u)
	}
	if _, err := c.RoomMembers(ctx, room.ID); err != nil { // warm
		b.Fatal(err)
	}
	for _, bc := range []struct {
		name string
		s    parley.Store
	}{{"cache", c}, {"sqlite", inner}} {
		b.Run(bc.name, func(b *testing.B) {
			before := cnt.total.Load()
			for b.Loop() {
				ms, err := bc.s.RoomMembers(ctx, room.ID)
				if err != nil || len(ms) != 1000 {
					b.Fatalf("RoomMembers() = %d, %v", len(ms), err)
				}
			}
			if bc.name == "cache" {
				b.ReportMetric(float64(cnt.total.Load()-before)/float64(b.N), "store-reads/op")
			}
		})
	}
}
